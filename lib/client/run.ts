/**
 * The one way every wrapper (withIdempotency, the Express middleware, the Fastify plugin, makeIdempotent)
 * runs an event once: `beginRun` claims it with a lease and, when this delivery got it, keeps the lease
 * alive while the handler runs; the wrapper then settles the run with `complete` or `release`.
 *
 * Lease (README "Leases that last as long as the work"):
 *   - a heartbeat extends the lease every `heartbeatMs` (default a third of it), each extension bounded by
 *     the time the lease has left, so an extension is confirmed well before the lease could lapse;
 *   - the lease's end is tracked on this process's monotonic clock, conservatively: it ends `leaseSeconds`
 *     after the request that set it was SENT (the database set it later than that), so no clock skew
 *     between this process and the database can make the client believe in a lease that already ended;
 *   - an extension refused because another claim took the lease over (409 claim_token_mismatch) or the key
 *     is gone (404: an operator released it) LOSES the lease: the handler's AbortSignal fires, the run is
 *     never completed, and the wrapper answers a retryable error, never a success;
 *   - when no extension could be confirmed before the lease's end (Keyward unreachable), the signal fires
 *     too (another delivery may take the lease over from then on), but the run may still complete: a
 *     complete with the claim token succeeds only if nobody took the lease over, which is what matters.
 * Complete is retried with backoff (100 ms doubling to 1 s) until confirmed, refused, or the lease's end
 * has passed (at least one attempt); a result the source does not keep (422) is dropped, and the run
 * completed without it. Release is best effort (the lease lapses otherwise).
 */
import { KeywardApiError, type ClaimResult, type KeywardClient, type ResultToSave, type SavedResult } from "./client";

export type IdempotencyPhase = "complete" | "release" | "extend" | "result";

/** What every wrapper takes. */
export type RunOptions = {
  client: KeywardClient;
  source: string;
  /**
   * How long a claim holds the key without a heartbeat (default 60 s): what a crashed process costs a
   * redelivery. The heartbeat keeps it held for as long as the handler runs.
   */
  leaseSeconds?: number;
  /** How often the lease is extended while the handler runs (default a third of the lease). */
  heartbeatMs?: number;
  /**
   * Save the handler's result with the key, so duplicates are answered with it (default false; the source
   * must keep results too: `keyward source update <source> --save-results on`).
   */
  saveResult?: boolean;
  /** Told about failures that do not change the answer (an extension, a dropped result, …); default console.error. */
  onError?: (err: unknown, phase: IdempotencyPhase) => void;
};

/** What the handler learns about its run (`signal` fires when the lease is lost or could not be kept). */
export type IdempotencyInfo = {
  source: string;
  eventId: string;
  /** The token that completes or releases this claim (the wrapper does both). */
  claimToken: string;
  /** The claim answer (claimKind tells a first claim from a lease takeover). */
  claim: ClaimResult;
  /** Fires when this run no longer holds the lease: stop, its work would not count (reason: an IdempotencyError). */
  signal: AbortSignal;
};

export type IdempotencyErrorCode = "in_flight" | "payload_mismatch" | "lease_lost" | "lease_unconfirmed" | "invalid_event";

/**
 * An outcome of an idempotent run that is not the handler's own: another delivery is running the event
 * (`in_flight`, retry after `retryAfterSeconds`), it was first received with another payload
 * (`payload_mismatch`), this run lost its lease (`lease_lost`: another delivery took it over, or it was
 * released) or could not confirm it (`lease_unconfirmed`), or the event id could not be read (`invalid_event`).
 */
export class IdempotencyError extends Error {
  readonly code: IdempotencyErrorCode;
  readonly retryable: boolean;
  readonly retryAfterSeconds?: number;
  constructor(code: IdempotencyErrorCode, message: string, o: { retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, o.cause === undefined ? undefined : { cause: o.cause });
    this.name = "IdempotencyError";
    this.code = code;
    this.retryable = code !== "payload_mismatch" && code !== "invalid_event";
    this.retryAfterSeconds = o.retryAfterSeconds;
  }
}

export function isIdempotencyError(err: unknown): err is IdempotencyError {
  return err instanceof IdempotencyError;
}

/** How `complete` ended: confirmed; refused because the lease was lost; or not confirmed before the lease's end. */
export type Completion = { kind: "confirmed"; resultSaved: boolean } | { kind: "lost"; error: IdempotencyError } | { kind: "unconfirmed"; error: unknown };

export type ClaimedRun = {
  info: IdempotencyInfo;
  /** The lease was lost for good (taken over or released): the run must not be reported as a success. */
  lost(): IdempotencyError | undefined;
  complete(result?: ResultToSave): Promise<Completion>;
  release(): Promise<void>;
};

export type Begun =
  | { kind: "claimed"; run: ClaimedRun }
  | { kind: "duplicate"; claim: ClaimResult; result?: SavedResult }
  | { kind: "in_flight"; claim: ClaimResult; error: IdempotencyError }
  | { kind: "payload_mismatch"; claim: ClaimResult; error: IdempotencyError }
  /** Keyward could not be reached or answered 5xx (after the client's retries): try the event later. */
  | { kind: "unavailable"; error: KeywardApiError }
  /** Keyward refused the claim (4xx): `invalid` for a bad event id or type, else a configuration fault (unknown source, key). */
  | { kind: "refused"; error: KeywardApiError; invalid: boolean };

export const DEFAULT_LEASE_SECONDS = 60;
const MIN_HEARTBEAT_MS = 100;

const now = () => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function reportTo(options: RunOptions): (err: unknown, phase: IdempotencyPhase) => void {
  return options.onError ?? ((err, phase) => console.error(`[keyward] ${phase} failed:`, err));
}

/** Claims `event` and, if this delivery got it, starts keeping its lease. */
export async function beginRun(options: RunOptions, event: { eventId: string; eventType: string; payloadHash?: string }): Promise<Begun> {
  const { client, source } = options;
  const leaseSeconds = options.leaseSeconds ?? DEFAULT_LEASE_SECONDS;
  const sentAt = now();
  let claim: ClaimResult;
  try {
    claim = await client.claim({ source, ...event, leaseSeconds });
  } catch (err) {
    if (!(err instanceof KeywardApiError)) throw err;
    if (err.retryable) return { kind: "unavailable", error: err };
    return { kind: "refused", error: err, invalid: refusedForTheEvent(err) };
  }
  const { eventId } = event;
  switch (claim.outcome) {
    case "duplicate":
      return { kind: "duplicate", claim, ...(claim.result ? { result: claim.result } : {}) };
    case "in_flight": {
      const retryAfterSeconds = secondsUntil(claim.leaseExpiresAt);
      const error = new IdempotencyError("in_flight", `event ${source}/${eventId} is being processed by another delivery`, { retryAfterSeconds });
      return { kind: "in_flight", claim, error };
    }
    case "payload_mismatch":
      return { kind: "payload_mismatch", claim, error: new IdempotencyError("payload_mismatch", `event ${source}/${eventId} was first received with another payload`) };
  }
  const keeper = new LeaseKeeper(options, { source, eventId, claimToken: claim.claimToken! }, leaseSeconds, sentAt);
  const info: IdempotencyInfo = { source, eventId, claimToken: claim.claimToken!, claim, signal: keeper.signal };
  return { kind: "claimed", run: claimedRun(options, keeper, info) };
}

/**
 * Whether Keyward refused the event itself (a 422 naming only its id or type): the sender's fault, answered
 * 400. Any other refusal (a source name, a lease or a payload hash Keyward refuses, an unknown source, a
 * refused key) is the service's configuration: 500, so the sender keeps the event and retries.
 */
function refusedForTheEvent(err: KeywardApiError): boolean {
  if (err.status !== 422 || err.code !== "invalid_request") return false;
  const fields = (err.details as { fields?: { field?: unknown }[] } | undefined)?.fields;
  return Array.isArray(fields) && fields.length > 0 && fields.every((f) => f?.field === "eventId" || f?.field === "eventType");
}

function claimedRun(options: RunOptions, keeper: LeaseKeeper, info: IdempotencyInfo): ClaimedRun {
  const { client } = options;
  const { source, eventId, claimToken } = info;
  const report = reportTo(options);
  return {
    info,
    lost: () => keeper.lostForGood,
    async complete(result) {
      let toSave = result;
      let lastError: unknown = new Error("the lease ended before complete was tried");
      try {
        for (let attempt = 0, delay = 100; ; attempt++) {
          if (keeper.lostForGood) return { kind: "lost", error: keeper.lostForGood };
          const left = keeper.confirmedUntil - now();
          if (attempt > 0 && left <= 0) return { kind: "unconfirmed", error: lastError };
          try {
            const done = await client.complete(
              { source, eventId, claimToken, ...(toSave ? { result: toSave } : {}) },
              // Half the lease's remaining time, so a lost answer still leaves time for a retry within it.
              { retries: 0, timeoutMs: Math.max(250, Math.min(10_000, left / 2)) },
            );
            return { kind: "confirmed", resultSaved: done.resultSaved === true };
          } catch (err) {
            if (!(err instanceof KeywardApiError)) throw err;
            if (err.status === 409 || err.status === 404) {
              const lost = keeper.lose("lease_lost", `the lease of ${source}/${eventId} was lost before complete: ${err.message}`, err);
              return { kind: "lost", error: lost };
            }
            if ((err.status === 422 || err.status === 413) && toSave) {
              // The source does not keep results, or this one is too large: complete without it.
              report(err, "result");
              toSave = undefined;
              continue;
            }
            if (!err.retryable) return { kind: "unconfirmed", error: err };
            lastError = err;
            await sleep(Math.max(0, Math.min(delay, keeper.confirmedUntil - now())));
            delay = Math.min(delay * 2, 1000);
          }
        }
      } finally {
        keeper.stop();
      }
    },
    async release() {
      keeper.stop();
      if (keeper.lostForGood) return; // nothing of ours to release
      try {
        await client.release({ source, eventId, claimToken });
      } catch (err) {
        report(err, "release");
      }
    },
  };
}

/** Extends the lease every heartbeat until stopped; fires `signal` when it is lost or could not be kept. */
class LeaseKeeper {
  readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  /** The lease's conservative end on this process's monotonic clock (ms). */
  confirmedUntil: number;
  lostForGood?: IdempotencyError;
  private stopped = false;
  private beatTimer?: ReturnType<typeof setTimeout>;
  private endTimer?: ReturnType<typeof setTimeout>;
  private failing = false;
  private readonly leaseMs: number;
  private readonly heartbeatMs: number;
  private readonly report: (err: unknown, phase: IdempotencyPhase) => void;

  constructor(
    private readonly options: RunOptions,
    private readonly key: { source: string; eventId: string; claimToken: string },
    private readonly leaseSeconds: number,
    sentAt: number,
  ) {
    this.leaseMs = leaseSeconds * 1000;
    this.heartbeatMs = Math.max(MIN_HEARTBEAT_MS, options.heartbeatMs ?? this.leaseMs / 3);
    this.confirmedUntil = sentAt + this.leaseMs;
    this.report = reportTo(options);
    this.schedule(this.heartbeatMs);
    this.watchEnd();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.beatTimer);
    clearTimeout(this.endTimer);
  }

  lose(code: "lease_lost" | "lease_unconfirmed", message: string, cause?: unknown): IdempotencyError {
    const error = new IdempotencyError(code, message, { cause });
    if (code === "lease_lost") {
      this.lostForGood ??= error;
      this.stop();
    }
    if (!this.signal.aborted) this.controller.abort(error);
    return this.lostForGood ?? error;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.beatTimer = unref(setTimeout(() => void this.beat(), ms));
  }

  /** Fires the signal when the lease's end passes without a confirmed extension. */
  private watchEnd(): void {
    clearTimeout(this.endTimer);
    if (this.stopped) return;
    this.endTimer = unref(
      setTimeout(() => {
        if (this.stopped || now() < this.confirmedUntil) return this.watchEnd();
        this.lose("lease_unconfirmed", `no extension of the lease of ${this.key.source}/${this.key.eventId} was confirmed before it ended`);
      }, Math.max(0, this.confirmedUntil - now())),
    );
  }

  private async beat(): Promise<void> {
    if (this.stopped) return;
    const sentAt = now();
    const left = this.confirmedUntil - sentAt;
    try {
      await this.options.client.extend(
        { ...this.key, leaseSeconds: this.leaseSeconds },
        { retries: 0, timeoutMs: Math.max(MIN_HEARTBEAT_MS, Math.min(this.heartbeatMs, left > 0 ? left : this.heartbeatMs)) },
      );
      if (this.stopped) return;
      this.confirmedUntil = Math.max(this.confirmedUntil, sentAt + this.leaseMs);
      this.failing = false;
      this.watchEnd();
      this.schedule(this.heartbeatMs);
    } catch (err) {
      if (this.stopped) return;
      if (err instanceof KeywardApiError && err.code === "claim_not_in_flight") return this.stop(); // completed meanwhile
      if (err instanceof KeywardApiError && (err.code === "claim_token_mismatch" || err.status === 404)) {
        this.lose("lease_lost", `the lease of ${this.key.source}/${this.key.eventId} was taken over or released: ${err.message}`, err);
        return;
      }
      // Unreachable or refused otherwise: said once per outage; tried again sooner, while the lease lasts.
      if (!this.failing) this.report(err, "extend");
      this.failing = true;
      this.schedule(Math.max(MIN_HEARTBEAT_MS, Math.min(this.heartbeatMs / 2, (this.confirmedUntil - now()) / 3)));
    }
  }
}

/** A lease's timers never keep a process alive on their own (Node; elsewhere timers have no unref). */
function unref<T>(timer: T): T {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

function secondsUntil(iso: string | undefined): number {
  const ms = iso ? Date.parse(iso) - Date.now() : NaN;
  return Number.isFinite(ms) ? Math.max(1, Math.ceil(ms / 1000)) : 1;
}
