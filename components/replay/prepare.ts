/**
 * The Replay screen's pure side: what each preflight category means in plain words, the counts shown
 * beside the dead-letter list, which dead letters' keys are at risk (soonest first), the wizard's rules
 * (what may be included, the phrase that confirms a replay, the request bodies), and a replay's progress.
 * No React, no fetch; unit-tested in test/replay/prepare.test.ts.
 */
import type { z } from "zod";
import { formatCount } from "@/components/ui/format";
import type { DeadLetter, DeadLetterStatus } from "@/lib/deadletters/schema";
import {
  CATEGORIES,
  DEFAULT_CONCURRENCY,
  MAX_CONCURRENCY,
  MAX_RATE_PER_SECOND,
  MIN_FORCE_REASON,
  startReplayRequest,
  type Category,
  type Outcome as ItemOutcome,
  type Preflight,
  type PreflightCounts,
  type PreflightItem,
  type PreflightRequest,
  type ReplayStatus,
  type ReplaySummary,
} from "@/lib/replay/schema";
import { formatDuration } from "@/lib/sources/duration";
import { isoToLocalInput, localInputToIso } from "@/components/ui/datetime-input";

export { isoToLocalInput, localInputToIso };

export { CATEGORIES };

export const DAY_MS = 86_400_000;

// ---------------------------------------------------------------------------------------------------
// The five preflight categories

export type CategoryInfo = {
  label: string;
  /** One plain sentence: what it means for a replay. */
  explanation: string;
  tone: "ok" | "warn" | "error" | "off";
};

export const CATEGORY_INFO: Record<Category, CategoryInfo> = {
  alive: {
    label: "Key alive",
    explanation: "Already protected: if it was processed, the handler's claim will reject the replay as a duplicate.",
    tone: "ok",
  },
  expiring: {
    label: "Key expiring",
    explanation: "Protected now, but the key expires before the replay window ends — extend first.",
    tone: "warn",
  },
  expired_processed: {
    label: "Expired, processed",
    explanation:
      "Was processed and its key is gone: replaying it would process it twice — excluded unless you force it with a reason.",
    tone: "error",
  },
  never_processed: {
    label: "Never processed",
    explanation: "No record of processing — safe to replay.",
    tone: "ok",
  },
  in_flight: {
    label: "In flight",
    explanation: "A handler holds it right now — wait.",
    tone: "off",
  },
};

export type CategoryRow = CategoryInfo & { category: Category; count: number };

/** The five categories in their fixed order, with their counts and meaning. */
export function categoryRows(counts: PreflightCounts): CategoryRow[] {
  return CATEGORIES.map((category) => ({ category, count: counts[category] ?? 0, ...CATEGORY_INFO[category] }));
}

/** A preflight's items grouped by category (every category present, in the server's order). */
export function itemsByCategory(items: readonly PreflightItem[]): Record<Category, PreflightItem[]> {
  const out = Object.fromEntries(CATEGORIES.map((c) => [c, [] as PreflightItem[]])) as Record<Category, PreflightItem[]>;
  for (const item of items) out[item.category]?.push(item);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Counts beside the list

export type CountRow = { key: string; label: string; count: number; percent: number };

/**
 * Counts by source or by error as rows with their share of `total` (whole percent), largest first; an
 * error message is cut to `maxLabel` characters for the label (the key keeps the whole text to filter by).
 */
export function countRows(entries: readonly { key: string; count: number }[], total: number, maxLabel = 80): CountRow[] {
  return [...entries]
    .sort((a, b) => b.count - a.count || a.key.localeCompare(b.key))
    .map((e) => ({
      key: e.key,
      label: e.key.length > maxLabel ? `${e.key.slice(0, maxLabel - 1)}…` : e.key,
      count: e.count,
      percent: total > 0 ? Math.round((e.count / total) * 100) : 0,
    }));
}

// ---------------------------------------------------------------------------------------------------
// Keys at risk

export type KeyRisk = { item: DeadLetter; expired: boolean; msLeft: number | null; label: string };

/**
 * Pending dead letters whose key already expired or expires within `horizonMs` (24 h): the ones a replay
 * could process twice, or soon could. Without a live key (expired, or `none`: pruned after it expired)
 * only letters the audit history says were processed count (`key.processed`; never-claimed or released
 * ones are safe to replay), as the server's keyRisk.expired counts them. Soonest first: no known expiry, then the earliest expiry
 * (already past before still to come); ties by the older failure.
 */
export function keysAtRisk(items: readonly DeadLetter[], nowMs: number, horizonMs = DAY_MS): KeyRisk[] {
  const risks: KeyRisk[] = [];
  for (const item of items) {
    if (item.status !== "pending") continue;
    const at = item.key.expiresAt ? Date.parse(item.key.expiresAt) : null;
    const live = item.key.state !== "none" && item.key.state !== "expired" && (at === null || at > nowMs);
    // Without a live key only a processed event is at risk: replaying a never-processed one is safe.
    if (!live && !item.key.processed) continue;
    if (item.key.state === "none") {
      risks.push({ item, expired: true, msLeft: null, label: "no live key" });
      continue;
    }
    const expired = item.key.state === "expired" || (at !== null && at <= nowMs);
    if (expired) {
      risks.push({ item, expired: true, msLeft: at === null ? null : at - nowMs, label: describeExpiry(at, nowMs) });
    } else if (item.key.state === "alive" && at !== null && at - nowMs <= horizonMs) {
      risks.push({ item, expired: false, msLeft: at - nowMs, label: describeExpiry(at, nowMs) });
    }
  }
  const rank = (r: KeyRisk) => (r.msLeft === null ? Number.NEGATIVE_INFINITY : r.msLeft);
  return risks.sort((a, b) => rank(a) - rank(b) || Date.parse(a.item.failedAt) - Date.parse(b.item.failedAt));
}

/** "expired 2h5m ago", "expires in 40m", "expired" (no time known). Minute precision. */
export function describeExpiry(atMs: number | null, nowMs: number): string {
  if (atMs === null) return "expired";
  const minutes = Math.round(Math.abs(atMs - nowMs) / 60_000);
  const span = minutes === 0 ? "less than a minute" : formatDuration(minutes * 60);
  return atMs <= nowMs ? `expired ${span} ago` : `expires in ${span}`;
}

/** The headline of the warning panel, from the server's counts (over all pending dead letters matching). */
export function keyRiskHeadline(risk: { expired: number; expiringSoon: number }): string | null {
  const parts: string[] = [];
  if (risk.expired > 0) parts.push(`${formatCount(risk.expired)} processed before and no live key any more`);
  if (risk.expiringSoon > 0) parts.push(`${formatCount(risk.expiringSoon)} whose ${risk.expiringSoon === 1 ? "key expires" : "keys expire"} within 24 h`);
  if (parts.length === 0) return null;
  return `Pending dead letters at risk: ${parts.join(", ")}.`;
}

// ---------------------------------------------------------------------------------------------------
// Filters

/** The statuses the list filters by (lib/deadletters/schema.ts DEAD_LETTER_STATUSES; a copy of the names only, so the schema module's parser stays off the client). */
export const FILTER_STATUSES: readonly DeadLetterStatus[] = ["pending", "replaying", "delivered", "unidentified", "discarded", "resolved"];

export type DeadLetterFilters = {
  source?: string;
  /** ISO instants. */
  from?: string;
  to?: string;
  errorContains?: string;
  status?: DeadLetterStatus;
};

/** The list's query string (without cursor); empty values are left out. */
export function filterParams(filters: DeadLetterFilters, extra: Record<string, string> = {}): URLSearchParams {
  const params = new URLSearchParams();
  for (const key of ["source", "from", "to", "errorContains", "status"] as const) {
    const v = filters[key];
    if (v) params.set(key, v);
  }
  for (const [k, v] of Object.entries(extra)) params.set(k, v);
  return params;
}

/**
 * The filters a shareable URL carries (/replay?source=stripe&status=pending&from=…): the same names as
 * filterParams writes; a value that is not one the list takes (an unknown status, an instant that does
 * not parse) is left out rather than sent to be refused.
 */
export function filtersFromParams(params: Record<string, string | string[] | undefined>): DeadLetterFilters {
  const one = (k: string) => {
    const v = params[k];
    const s = Array.isArray(v) ? v[v.length - 1] : v;
    return s && s.trim() ? s : undefined;
  };
  const instant = (k: string) => {
    const v = one(k);
    return v && !Number.isNaN(Date.parse(v)) ? v : undefined;
  };
  const status = one("status");
  const f: DeadLetterFilters = {
    source: one("source"),
    from: instant("from"),
    to: instant("to"),
    errorContains: one("errorContains"),
    status: status && (FILTER_STATUSES as readonly string[]).includes(status) ? (status as DeadLetterStatus) : undefined,
  };
  for (const k of Object.keys(f) as (keyof DeadLetterFilters)[]) if (f[k] === undefined) delete f[k];
  return f;
}

export function hasFilters(f: DeadLetterFilters): boolean {
  return Boolean(f.source || f.from || f.to || f.errorContains || f.status);
}

// ---------------------------------------------------------------------------------------------------
// Selecting what to replay

/** What the wizard preflights: every pending dead letter of a source matching the filters, or checked ones. */
export type Selection =
  | { kind: "filter"; source: string; filter: { from?: string; to?: string; errorContains?: string } }
  | { kind: "ids"; source: string; ids: string[] };

/**
 * The checked rows as a selection: they must all be pending and of one source (a preflight covers one
 * source). An error sentence otherwise.
 */
export function selectionFromChecked(rows: readonly DeadLetter[]): { ok: true; selection: Selection } | { ok: false; error: string } {
  if (rows.length === 0) return { ok: false, error: "Check at least one pending dead letter." };
  const sources = [...new Set(rows.map((r) => r.source))];
  if (sources.length > 1) return { ok: false, error: `The checked dead letters come from ${sources.length} sources; a replay covers one source.` };
  const notPending = rows.filter((r) => r.status !== "pending").length;
  if (notPending > 0) return { ok: false, error: `${notPending} checked dead letter${notPending === 1 ? " is" : "s are"} not pending.` };
  return { ok: true, selection: { kind: "ids", source: sources[0], ids: rows.map((r) => r.id) } };
}

/** The filters as a selection: needs a source; the status filter does not apply (only pending ones are replayed). */
export function selectionFromFilters(f: DeadLetterFilters): { ok: true; selection: Selection } | { ok: false; error: string } {
  if (!f.source) return { ok: false, error: "Filter by a source first: a replay covers one source." };
  const filter = {
    ...(f.from ? { from: f.from } : {}),
    ...(f.to ? { to: f.to } : {}),
    ...(f.errorContains ? { errorContains: f.errorContains } : {}),
  };
  return { ok: true, selection: { kind: "filter", source: f.source, filter } };
}

/** POST /api/v1/replays/preflight's body, as the server's schema takes it. */
export type PreflightBody = PreflightRequest;

export function preflightBody(s: Selection): PreflightBody {
  return s.kind === "ids" ? { source: s.source, deadLetterIds: s.ids } : { source: s.source, filter: s.filter };
}

/** The selection in words, for the wizard's first step. */
export function describeSelection(s: Selection): string {
  if (s.kind === "ids") return `${formatCount(s.ids.length)} checked dead letter${s.ids.length === 1 ? "" : "s"} of ${s.source}`;
  const parts: string[] = [];
  if (s.filter.from) parts.push(`failed from ${s.filter.from}`);
  if (s.filter.to) parts.push(`until ${s.filter.to}`);
  if (s.filter.errorContains) parts.push(`error contains “${s.filter.errorContains}”`);
  return `every pending dead letter of ${s.source}${parts.length ? ` (${parts.join(", ")})` : ""}`;
}

// ---------------------------------------------------------------------------------------------------
// The preflight's validity and the extend step

/** Time left on a preflight (validUntil = createdAt + 15 min): a "m:ss" countdown, or stale. */
export function preflightValidity(validUntil: string, nowMs: number): { stale: boolean; secondsLeft: number; label: string } {
  const secondsLeft = Math.max(0, Math.floor((Date.parse(validUntil) - nowMs) / 1000));
  if (secondsLeft <= 0) return { stale: true, secondsLeft: 0, label: "stale: run the preflight again" };
  const m = Math.floor(secondsLeft / 60);
  const s = secondsLeft % 60;
  return { stale: false, secondsLeft, label: `valid for ${m}:${String(s).padStart(2, "0")}` };
}

/** Whether the wizard shows the extend step: expiring keys, not extended yet. */
export function needsExtend(p: Pick<Preflight, "counts" | "extendedAt">): boolean {
  return p.counts.expiring > 0 && p.extendedAt === null;
}

// ---------------------------------------------------------------------------------------------------
// The wizard's steps

/** A preflight on screen, and how many keys its extend moved (null: not extended in this wizard). */
type Checked = { preflight: Preflight; extended: number | null };

/**
 * Where the wizard is, and only what that step has: nothing before the preflight ran, the preflight
 * (and the extend's count) while it is reviewed, extended and confirmed, the replay's id once started.
 */
export type WizardState =
  | { step: "select" }
  | ({ step: "preflight" } & Checked)
  | ({ step: "extend" } & Checked)
  | ({ step: "confirm" } & Checked)
  | { step: "run"; replayId: string; finished: boolean };

export type WizardEvent =
  /** A preflight (first or re-run) answered: it is reviewed afresh. */
  | { type: "preflighted"; preflight: Preflight }
  /** The extend answered with the re-classified preflight. */
  | { type: "extended"; preflight: Preflight; extended: number }
  /** Forward: from the preflight to the extend step when keys expire inside the window, else to confirm. */
  | { type: "next" }
  | { type: "back" }
  | { type: "started"; replayId: string }
  | { type: "finished" };

export const WIZARD_START: WizardState = { step: "select" };

/** The wizard's one transition rule. An event that does not apply to the current step changes nothing. */
export function wizardReducer(state: WizardState, event: WizardEvent): WizardState {
  switch (event.type) {
    case "preflighted":
      return state.step === "run" ? state : { step: "preflight", preflight: event.preflight, extended: null };
    case "extended":
      return state.step === "preflight" || state.step === "extend" || state.step === "confirm"
        ? { ...state, preflight: event.preflight, extended: event.extended }
        : state;
    case "next":
      if (state.step === "preflight") return { ...state, step: needsExtend(state.preflight) ? "extend" : "confirm" };
      if (state.step === "extend") return { ...state, step: "confirm" };
      return state;
    case "back":
      if (state.step === "preflight") return { step: "select" };
      if (state.step === "extend") return { ...state, step: "preflight" };
      if (state.step === "confirm") {
        return { ...state, step: needsExtend(state.preflight) || state.extended !== null ? "extend" : "preflight" };
      }
      return state;
    case "started":
      return state.step === "confirm" ? { step: "run", replayId: event.replayId, finished: false } : state;
    case "finished":
      return state.step === "run" ? { ...state, finished: true } : state;
  }
}

/** The wizard's steps as the step bar names them. */
export const WIZARD_STEPS = [
  { step: "select", label: "Select" },
  { step: "preflight", label: "Preflight" },
  { step: "extend", label: "Extend" },
  { step: "confirm", label: "Confirm" },
  { step: "run", label: "Progress" },
  { step: "results", label: "Results" },
] as const;

/** The step the bar marks current: a finished run shows its results. */
export function currentStep(state: WizardState): (typeof WIZARD_STEPS)[number]["step"] {
  return state.step === "run" && state.finished ? "results" : state.step;
}

// ---------------------------------------------------------------------------------------------------
// The confirm step

/**
 * Whether a category may be ticked: in_flight never (a handler holds it); expiring only after the keys
 * were extended (the server refuses otherwise); a category with no items is not offered.
 */
export function includable(category: Category, p: Pick<Preflight, "counts" | "extendedAt">): boolean {
  if (category === "in_flight") return false;
  if ((p.counts[category] ?? 0) === 0) return false;
  if (category === "expiring") return p.extendedAt !== null;
  return true;
}

/** Ticked at first: alive, never_processed, and expiring once extended. expired_processed never by default. */
export function defaultInclude(p: Pick<Preflight, "counts" | "extendedAt">): Category[] {
  return (["alive", "expiring", "never_processed"] as const).filter((c) => includable(c, p));
}

/** How many events the replay sends with these categories included. */
export function replayCount(counts: PreflightCounts, include: readonly Category[]): number {
  return include.reduce((n, c) => n + (counts[c] ?? 0), 0);
}

/**
 * What the person must type to start: the source's name for a forced replay (it includes events that
 * were processed and whose keys are gone), otherwise the number of events to replay.
 */
export function confirmPhrase(source: string, count: number, forced: boolean): string {
  return forced ? source : String(count);
}

/** The typed text matches the phrase (surrounding spaces ignored; a count may be typed with separators). */
export function confirmMatches(typed: string, phrase: string, forced: boolean): boolean {
  const t = typed.trim();
  if (forced) return t === phrase;
  return t.replace(/[\s,_.']/g, "") === phrase;
}

/** POST /api/v1/replays's body as the server's schema outputs it (rate and concurrency always sent). */
export type ReplayBody = z.output<typeof startReplayRequest>;

/** The confirm form's fields as typed; `concurrency` left out means the default. */
export type ConfirmState = { include: Category[]; reason: string; typed: string; rate: string; concurrency?: string };

/**
 * The confirm form as a POST /api/v1/replays body, or every reason it cannot be sent yet (each a sentence
 * for the screen). Checks what the server checks, so the button says why before a round trip.
 */
export function checkConfirm(
  p: Pick<Preflight, "preflightId" | "source" | "counts" | "extendedAt">,
  state: ConfirmState,
): { ok: true; body: ReplayBody; count: number } | { ok: false; problems: string[]; count: number } {
  const include = CATEGORIES.filter((c) => state.include.includes(c));
  const count = replayCount(p.counts, include);
  const forced = include.includes("expired_processed");
  const problems: string[] = [];
  for (const c of include) if (!includable(c, p)) problems.push(`${CATEGORY_INFO[c].label} cannot be included${c === "expiring" ? " before the keys are extended" : ""}.`);
  if (count === 0) problems.push("Nothing to replay: include at least one category with events.");
  // Each field through the server's own schema (lib/replay/schema.ts), with a sentence for the screen.
  const fields = startReplayRequest.shape;
  const force = fields.force.safeParse({ reason: state.reason });
  if (forced && !force.success) {
    problems.push(
      state.reason.trim().length < MIN_FORCE_REASON
        ? `A forced replay needs a reason of at least ${MIN_FORCE_REASON} characters.`
        : `The reason ${force.error.issues[0]?.message ?? "is refused"}.`,
    );
  }
  const rate = fields.ratePerSecond.safeParse(Number(state.rate.trim()));
  if (!rate.success) problems.push(`Rate must be a whole number from 1 to ${MAX_RATE_PER_SECOND} per second.`);
  const concurrency = fields.concurrency.safeParse(Number((state.concurrency ?? String(DEFAULT_CONCURRENCY)).trim()));
  if (!concurrency.success) problems.push(`Concurrency must be a whole number from 1 to ${MAX_CONCURRENCY} deliveries at a time.`);
  const phrase = confirmPhrase(p.source, count, forced);
  if (count > 0 && !confirmMatches(state.typed, phrase, forced)) {
    problems.push(forced ? `Type the source name, ${p.source}, to confirm.` : `Type the number of events, ${phrase}, to confirm.`);
  }
  if (problems.length > 0 || !rate.success || !concurrency.success) return { ok: false, problems, count };
  const reason = forced && force.success ? force.data : undefined;
  return {
    ok: true,
    count,
    body: { preflightId: p.preflightId, include, ...(reason ? { force: reason } : {}), ratePerSecond: rate.data, concurrency: concurrency.data },
  };
}

/**
 * The Idempotency-Key for a start request: the same body sent again (a double click, a retry after a
 * network error) keeps the key, so the server starts one replay; a changed body gets `fresh` (a key the
 * server saw with another body would be refused as reused).
 */
export function idempotencyKeyFor(
  previous: { key: string; body: string } | null,
  body: ReplayBody,
  fresh: () => string,
): { key: string; body: string } {
  const json = JSON.stringify(body);
  if (previous && previous.body === json) return previous;
  return { key: fresh(), body: json };
}

// ---------------------------------------------------------------------------------------------------
// Progress and results

export const OUTCOMES: readonly ItemOutcome[] = ["delivered", "failed", "skipped_unsafe", "cancelled", "delivering", "pending"];

export const OUTCOME_LABEL: Record<ItemOutcome, string> = {
  pending: "Waiting",
  delivering: "Sending",
  delivered: "Delivered",
  failed: "Failed",
  skipped_unsafe: "Skipped (became unsafe)",
  cancelled: "Cancelled",
};

export function isFinished(status: ReplayStatus): boolean {
  return status === "completed" || status === "cancelled";
}

/** Items settled so far (delivered, failed, skipped, cancelled) and their share of the total, 0–100 (whole). */
export function replayProgress(r: Pick<ReplaySummary, "total" | "counts" | "status">): { done: number; percent: number } {
  const c = r.counts;
  const done = (c.delivered ?? 0) + (c.failed ?? 0) + (c.skipped_unsafe ?? 0) + (c.cancelled ?? 0);
  if (r.total <= 0) return { done, percent: isFinished(r.status) ? 100 : 0 };
  // Floor, so 100 % means every item settled.
  return { done, percent: Math.min(100, Math.floor((done / r.total) * 100)) };
}

/** How often the progress view polls: every second while running, slower while paused, not when done. */
export function pollInterval(status: ReplayStatus | undefined): number | false {
  if (status === "running") return 1000;
  if (status === "paused") return 5000;
  return status === undefined ? 1000 : false;
}

/** Which controls a replay offers in its state (the server refuses the others with 409). */
export function replayControls(status: ReplayStatus): { pause: boolean; resume: boolean; cancel: boolean } {
  return { pause: status === "running", resume: status === "paused", cancel: status === "running" || status === "paused" };
}

/** The outcome counts worth showing: settled ones always, in-progress ones only while non-zero. */
export function outcomeRows(counts: Record<ItemOutcome, number>): { outcome: ItemOutcome; label: string; count: number }[] {
  return OUTCOMES.filter((o) => (o !== "pending" && o !== "delivering") || (counts[o] ?? 0) > 0).map((o) => ({
    outcome: o,
    label: OUTCOME_LABEL[o],
    count: counts[o] ?? 0,
  }));
}

/** A one-line summary of a replay, for the list and the results heading. */
export function replayHeadline(r: Pick<ReplaySummary, "total" | "counts" | "status">): string {
  const { done } = replayProgress(r);
  const c = r.counts;
  if (isFinished(r.status)) {
    const parts = [`${formatCount(c.delivered)} delivered`];
    if (c.failed) parts.push(`${formatCount(c.failed)} failed`);
    if (c.skipped_unsafe) parts.push(`${formatCount(c.skipped_unsafe)} skipped as unsafe`);
    if (c.cancelled) parts.push(`${formatCount(c.cancelled)} cancelled`);
    return `${r.status === "cancelled" ? "Cancelled" : "Finished"}: ${parts.join(", ")} of ${formatCount(r.total)}.`;
  }
  return `${formatCount(done)} of ${formatCount(r.total)} settled${r.status === "paused" ? " (paused)" : ""}.`;
}
