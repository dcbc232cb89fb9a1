/**
 * The replay wizard's rules: what is selected (checked letters or the list's filters), the preflight's
 * validity and the extend step, the steps as one state changed by one reducer, and the confirm step
 * (what may be included, the phrase that confirms, the request body and its Idempotency-Key). Pure;
 * unit-tested in test/replay/console-view.unit.test.ts.
 */
import type { z } from "zod";
import { formatCount } from "@/components/ui/format";
import type { DeadLetter } from "@/lib/deadletters/schema";
import {
  CATEGORIES,
  DEFAULT_CONCURRENCY,
  MAX_CONCURRENCY,
  MAX_RATE_PER_SECOND,
  MIN_FORCE_REASON,
  startReplayRequest,
  type Category,
  type Preflight,
  type PreflightCounts,
  type PreflightRequest,
} from "@/lib/replay/schema";
import { CATEGORY_INFO } from "./categories";
import type { DeadLetterFilters } from "./dead-letter-list";

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
  | { type: "finished" }
  /** "Retry failed items" on the results step: the new preflight of the finished replay's failures. */
  | { type: "retried"; preflight: Preflight };

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
      // Not past a preflight whose readiness checks fail: Start would refuse (409) after the count was typed.
      if (state.step === "preflight" && !state.preflight.ready) return state;
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
    case "retried":
      return state.step === "run" && state.finished ? { step: "preflight", preflight: event.preflight, extended: null } : state;
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
