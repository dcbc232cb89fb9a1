/**
 * The Sources screen's pure side: a source's parts as display strings, its invariant checks summed up,
 * its projected size in words, and the create/edit form's state turned into a request body (durations
 * typed as "3d", "1d12h", parsed here, each refusal tied to its field). No React; unit-tested in
 * test/sources/prepare.test.ts.
 */
import { formatBytes, formatCount } from "@/components/ui/format";
import type { Invariant } from "@/lib/retention/invariants";
import type { SourceParts } from "@/lib/retention/presets";
import type { SourceReport } from "@/lib/sources/sources";
import { sourceName } from "@/lib/claims/schema";
import { formatDuration, parseDuration } from "@/lib/sources/duration";
import { MAX_TTL_SECONDS } from "@/lib/sources/schema";
import { amqpUrlProblem, isAmqpUrl } from "@/lib/amqp/url";

/** The server's bound too (lib/sources/schema.ts `deadLetterRetention`, which names it only in a message). */
const MAX_DEAD_LETTER_RETENTION_SECONDS = 365 * 86400;

export type PartKey = keyof SourceParts;

/** The four parts in the order they add up, with the words the screen uses for each. */
export const PARTS: readonly { key: PartKey; field: PartField; label: string; hint: string }[] = [
  { key: "retryWindowSeconds", field: "retryWindow", label: "Retry window", hint: "the sender's longest retry window" },
  { key: "queueLagSeconds", field: "queueLag", label: "Queue lag", hint: "time an event may wait in your queue before its claim" },
  { key: "clockSkewSeconds", field: "clockSkew", label: "Clock skew", hint: "clock differences at the boundary" },
  { key: "replaySeconds", field: "replay", label: "Replay margin", hint: "deliberate replays of old events" },
];

/** "3d + 1d + 5m + 2d23h55m = 7d": how a TTL is made up. */
export function ttlEquation(parts: SourceParts): string {
  const sum = PARTS.reduce((n, p) => n + parts[p.key], 0);
  return `${PARTS.map((p) => formatDuration(parts[p.key])).join(" + ")} = ${formatDuration(sum)}`;
}

// ---------------------------------------------------------------------------------------------------
// Invariant checks

export type InvariantSummary = {
  failing: Invariant[];
  /** "All 3 checks pass", "1 warning", "2 warnings". */
  label: string;
};

export function summarizeInvariants(invariants: readonly Invariant[]): InvariantSummary {
  const failing = invariants.filter((i) => !i.ok);
  if (failing.length === 0) {
    return { failing, label: invariants.length === 1 ? "The check passes" : `All ${invariants.length} checks pass` };
  }
  return { failing, label: `${failing.length} warning${failing.length === 1 ? "" : "s"}` };
}

/** What each check looks at, in a few words (the ids come from lib/retention/invariants.ts). */
const INVARIANT_TITLES: Record<string, string> = {
  ttl_floor: "TTL floor",
  margins: "Margins",
  audit_outlives_keys: "Audit history",
  dead_letters_within_keys: "Dead letters",
};

export function invariantTitle(id: string): string {
  return INVARIANT_TITLES[id] ?? id.replace(/_/g, " ");
}

/** Above the list: "3 sources, 1 with warnings" (or "…, all checks pass"). */
export function sourcesSummary(sources: readonly { invariants: readonly Invariant[] }[]): string {
  const flagged = sources.filter((s) => s.invariants.some((i) => !i.ok)).length;
  const n = `${sources.length} source${sources.length === 1 ? "" : "s"}`;
  return flagged === 0 ? `${n}, all checks pass` : `${n}, ${flagged} with warnings`;
}

// ---------------------------------------------------------------------------------------------------
// Projection

/** The steady-state projection the server sends with each source. */
export type Projection = SourceReport["projection"];

/** Claims per second in words that stay readable at low rates: "0.0028/s (10/h)". */
export function formatClaimRate(perSecond: number): string {
  if (perSecond === 0) return "0/s";
  const perHour = perSecond * 3600;
  if (perSecond >= 1) return `${perSecond.toFixed(perSecond >= 100 ? 0 : 1)}/s`;
  return `${perSecond.toPrecision(2)}/s (${Math.round(perHour)}/h)`;
}

/**
 * The steady-state size as a sentence's parts: the result, and how it is reached (recent claim rate ×
 * TTL × bytes per key), saying whether bytes per key were measured on this database or assumed.
 */
export function describeProjection(p: Projection, ttlSeconds: number): { result: string; formula: string; basis: string } {
  return {
    result: `≈ ${formatCount(p.keys)} key${p.keys === 1 ? "" : "s"}, ${formatBytes(p.bytes)}`,
    formula: `${formatClaimRate(p.claimRate)} × ${formatDuration(ttlSeconds)} × ${p.bytesPerKey} B/key`,
    basis: p.bytesPerKeyMeasured
      ? "bytes per key measured on this database"
      : "bytes per key assumed (measured once the key table holds enough keys)",
  };
}

// ---------------------------------------------------------------------------------------------------
// The create / edit form

export type PartField = "retryWindow" | "queueLag" | "clockSkew" | "replay";
export type FormField = "name" | "preset" | PartField | "deadLetterRetention" | "ttl";

/** What the person typed: durations as text ("3d", "1d12h"); an empty dead-letter retention means none. */
export type SourceFormState = {
  name: string;
  preset: string;
  retryWindow: string;
  queueLag: string;
  clockSkew: string;
  replay: string;
  deadLetterRetention: string;
};

export type FieldErrors = Partial<Record<FormField | "form", string>>;

export type SourceLike = SourceParts & { name: string; preset: string | null; deadLetterRetentionSeconds: number | null };
export type PresetLike = { name: string; parts: SourceParts };

export const emptyForm = (): SourceFormState => ({
  name: "",
  preset: "",
  retryWindow: "",
  queueLag: "",
  clockSkew: "",
  replay: "",
  deadLetterRetention: "",
});

/** The edit form, prefilled from the source as it is. */
export function formFromSource(s: SourceLike): SourceFormState {
  return {
    name: s.name,
    preset: s.preset ?? "",
    ...partsAsText(s),
    deadLetterRetention: s.deadLetterRetentionSeconds === null ? "" : formatDuration(s.deadLetterRetentionSeconds),
  };
}

/** Picking a preset fills the four parts with its figures (still editable); "" (custom) leaves them. */
export function applyPreset(state: SourceFormState, preset: PresetLike | undefined): SourceFormState {
  if (!preset) return { ...state, preset: "" };
  return { ...state, preset: preset.name, ...partsAsText(preset.parts) };
}

function partsAsText(parts: SourceParts): Pick<SourceFormState, PartField> {
  return Object.fromEntries(PARTS.map((p) => [p.field, formatDuration(parts[p.key])])) as Pick<SourceFormState, PartField>;
}

/** The parts as typed, in seconds; a part that does not parse is left out. */
export function partsFromForm(state: SourceFormState): { parts: Partial<SourceParts>; errors: FieldErrors } {
  const parts: Partial<SourceParts> = {};
  const errors: FieldErrors = {};
  for (const p of PARTS) {
    const text = state[p.field].trim();
    if (!text) {
      errors[p.field] = `${p.label} is required, e.g. 1d or 5m`;
      continue;
    }
    try {
      parts[p.key] = parseDuration(text);
    } catch (err) {
      errors[p.field] = `${p.label}: ${(err as Error).message}`;
      continue;
    }
    if (p.key === "retryWindowSeconds" && parts[p.key] === 0) {
      errors[p.field] = "Retry window must be at least 1s";
      delete parts[p.key];
    }
  }
  return { parts, errors };
}

const isComplete = (p: Partial<SourceParts>): p is SourceParts => PARTS.every((x) => p[x.key] !== undefined);

/** The typed parts, once all four parse (for the live TTL line); null until then. */
export function formParts(state: SourceFormState): SourceParts | null {
  const { parts } = partsFromForm(state);
  return isComplete(parts) ? parts : null;
}

/**
 * The longest dead-letter retention these parts keep safe: a letter made at the end of the retry window
 * and queue lag has only the clock-skew and replay margins of key life left (the same rule as the
 * dead_letters_within_keys check in lib/retention/invariants.ts).
 */
export function safeDeadLetterRetention(parts: SourceParts): number {
  return parts.clockSkewSeconds + parts.replaySeconds;
}

/** Whether the typed parts still are exactly the chosen preset's (else the source is saved as custom). */
export function matchesPreset(state: SourceFormState, preset: PresetLike | undefined): boolean {
  if (!preset) return false;
  const { parts } = partsFromForm(state);
  return PARTS.every((p) => parts[p.key] === preset.parts[p.key]);
}

export type CreateSourceBody = SourceParts & { name: string; preset?: string; deadLetterRetentionSeconds?: number };
export type UpdateSourceBody = SourceParts & { preset?: string; deadLetterRetentionSeconds: number | null };

type Checked<T> = { ok: true; body: T } | { ok: false; errors: FieldErrors };

function checkCommon(state: SourceFormState): { parts?: SourceParts; deadLetter: number | null; errors: FieldErrors } {
  const { parts, errors } = partsFromForm(state);
  let deadLetter: number | null = null;
  const dl = state.deadLetterRetention.trim();
  if (dl) {
    try {
      deadLetter = parseDuration(dl);
      if (deadLetter < 1) errors.deadLetterRetention = "Dead-letter retention must be at least 1s (leave it empty for none)";
      else if (deadLetter > MAX_DEAD_LETTER_RETENTION_SECONDS) errors.deadLetterRetention = "Dead-letter retention must be at most 365d";
    } catch (err) {
      errors.deadLetterRetention = `Dead-letter retention: ${(err as Error).message}`;
    }
  }
  if (!isComplete(parts)) return { deadLetter, errors };
  const ttl = PARTS.reduce((n, p) => n + parts[p.key], 0);
  if (ttl > MAX_TTL_SECONDS) errors.ttl = `The TTL (${formatDuration(ttl)}) must be at most 90d: shorten a part`;
  return { parts, deadLetter, errors };
}

/**
 * The create form as a POST /api/v1/sources body: the name, the four parts (always sent, so what is on
 * screen is what is saved), the preset when one is chosen (the server keeps it only while the parts still
 * match it), and the dead-letter retention when given.
 */
export function createBody(state: SourceFormState): Checked<CreateSourceBody> {
  const { parts, deadLetter, errors } = checkCommon(state);
  const name = state.name.trim();
  if (!name) errors.name = "Name is required";
  else if (!sourceName.safeParse(name).success) {
    errors.name = "Name: 1-64 lowercase letters, digits, _ or -, starting with a letter or digit";
  }
  if (Object.keys(errors).length > 0 || !parts) return { ok: false, errors };
  return {
    ok: true,
    body: {
      name,
      ...(state.preset ? { preset: state.preset } : {}),
      ...parts,
      ...(deadLetter !== null ? { deadLetterRetentionSeconds: deadLetter } : {}),
    },
  };
}

/**
 * The edit form as a PATCH body: the whole desired state (four parts, preset if chosen, dead-letter
 * retention or null to clear it). Refused when it changes nothing.
 */
export function updateBody(state: SourceFormState, current: SourceLike): Checked<UpdateSourceBody> {
  const { parts, deadLetter, errors } = checkCommon(state);
  if (Object.keys(errors).length > 0 || !parts) return { ok: false, errors };
  const unchanged =
    PARTS.every((p) => parts[p.key] === current[p.key]) &&
    deadLetter === current.deadLetterRetentionSeconds &&
    (state.preset || null) === current.preset;
  if (unchanged) return { ok: false, errors: { form: "Nothing changed: edit a field, or cancel" } };
  return {
    ok: true,
    body: { ...(state.preset ? { preset: state.preset } : {}), ...parts, deadLetterRetentionSeconds: deadLetter },
  };
}

/** The edit form as the PATCH body it would send, changed or not (the edit preview); null while a field is refused. */
export function previewBody(state: SourceFormState): UpdateSourceBody | null {
  const { parts, deadLetter, errors } = checkCommon(state);
  if (Object.keys(errors).length > 0 || !parts) return null;
  return { ...(state.preset ? { preset: state.preset } : {}), ...parts, deadLetterRetentionSeconds: deadLetter };
}

/** Request field names (as the server's 422 `details.fields` name them) → the form field they came from. */
const SERVER_FIELDS: Record<string, FormField> = {
  name: "name",
  preset: "preset",
  retryWindowSeconds: "retryWindow",
  queueLagSeconds: "queueLag",
  clockSkewSeconds: "clockSkew",
  replaySeconds: "replay",
  deadLetterRetentionSeconds: "deadLetterRetention",
  ttlSeconds: "ttl",
};

/**
 * A server refusal's `details.fields` as errors next to the form's fields; anything that names no field
 * (or an error without details) becomes the form-level error. Empty when `details` carries no fields.
 */
export function fieldErrorsFromServer(details: unknown): FieldErrors {
  const fields = (details as { fields?: unknown } | undefined)?.fields;
  if (!Array.isArray(fields)) return {};
  const errors: FieldErrors = {};
  for (const f of fields as { field?: unknown; message?: unknown }[]) {
    if (typeof f?.message !== "string") continue;
    const key = typeof f.field === "string" ? SERVER_FIELDS[f.field] : undefined;
    const slot = key ?? "form";
    const text = key ? f.message : `${typeof f.field === "string" ? `${f.field}: ` : ""}${f.message}`;
    errors[slot] = errors[slot] ? `${errors[slot]}; ${text}` : text;
  }
  return errors;
}

// ---------------------------------------------------------------------------------------------------
// The replay destination

/**
 * The typed replay destination as the PATCH value: an http(s) URL without credentials (the server's rule,
 * lib/sources/schema.ts), or null for empty (no destination).
 */
export function parseReplayDestination(text: string): { ok: true; value: string | null } | { ok: false; error: string } {
  const t = text.trim();
  if (!t) return { ok: true, value: null };
  let url: URL;
  try {
    url = new URL(t);
  } catch {
    return { ok: false, error: "Type a full URL, e.g. https://billing.internal/webhooks/replay" };
  }
  if (isAmqpUrl(t)) {
    // RabbitMQ (docs/inlets.md#replaying-to-rabbitmq): the password is stored encrypted and shown masked.
    const problem = amqpUrlProblem(t);
    return problem ? { ok: false, error: `The AMQP URL ${problem}` } : { ok: true, value: t };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, error: "The destination must be an http://, https://, amqp:// or amqps:// URL" };
  if (url.username || url.password) return { ok: false, error: "No credentials in the URL: the signature authenticates each request" };
  if (t.length > 2048) return { ok: false, error: "The destination must be at most 2048 characters" };
  return { ok: true, value: t };
}

/**
 * The signing-secret rotation's grace period as the Sources screen says it: while it runs, the previous
 * secret still signs replays next to the new one (`active`), so the destination may switch at any time
 * before `until`; once it ended, only the new secret signs. Pure (`now` in epoch ms).
 */
export function signingGrace(graceUntil: string | null, now: number): { active: boolean; until: string } | null {
  if (!graceUntil) return null;
  return { active: Date.parse(graceUntil) > now, until: graceUntil };
}
