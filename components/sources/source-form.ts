/**
 * The create / edit source form: its state (durations typed as "3d", "1d12h", parsed here, each refusal
 * tied to its field), presets, and the request bodies it sends; the server's 422 details mapped back to
 * the fields. Pure; unit-tested in test/sources/source-form.unit.test.ts.
 */
import type { SourceParts } from "@/lib/retention/presets";
import { sourceName } from "@/lib/claims/schema";
import { formatDuration, parseDuration } from "@/lib/sources/duration";
import { MAX_TTL_SECONDS } from "@/lib/sources/schema";
import { PARTS } from "./describe";

/** The server's bound too (lib/sources/schema.ts `deadLetterRetention`, which names it only in a message). */
const MAX_DEAD_LETTER_RETENTION_SECONDS = 365 * 86400;

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
