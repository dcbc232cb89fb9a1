/**
 * The Keyward HTTP client (`keyward/client`): plain `fetch`, no server code. Every method answers a typed
 * result or throws a `KeywardApiError` (the server's `{ error: { code, message, details } }`, or a network
 * failure / timeout with status 0).
 *
 * Ambiguous failures (docs/reliability.md, "the attemptId contract"): a claim carries an `attemptId`, a
 * random UUID per logical claim unless the caller gives one. A request that timed out, failed on the
 * network or answered 502/503/504 may still have committed; the retry resends the same body, so a claim
 * that did commit comes back `claimed` with `repeat: true` and its claim token, instead of `duplicate`.
 */
import type {
  ClaimOutcome,
  ClaimRequest,
  ClaimResult,
  BatchClaimRequest,
  KeyState,
  ClaimStatus,
  ExtendResult,
  SavedResult,
  SettleResult,
} from "../claims/schema";
import { toBase64 } from "./bytes";

export type { SettleResult, ExtendResult, SavedResult };
import type { BatchItemResult, DeadLetterInput } from "../deadletters/schema";

export type { ClaimOutcome, ClaimResult, KeyState, ClaimStatus, BatchItemResult, DeadLetterInput };

export type KeywardClientOptions = {
  /** Where Keyward serves its API, e.g. `https://keyward.internal` (no `/api/v1`). */
  baseUrl: string;
  /** An API key: scope `claims:write` for claims, `deadletters:write` for dead letters. */
  apiKey: string;
  /** A `fetch` implementation (default: the global one). */
  fetch?: typeof fetch;
  /** Per-request timeout in milliseconds (default 10 000). */
  timeoutMs?: number;
  /** How many times a retryable failure is retried (default 2, so at most 3 requests). */
  retries?: number;
  /** The first retry's delay in milliseconds, doubled for each further retry (default 200). */
  retryDelayMs?: number;
};

/** Per-call overrides of the client's timeout and retries (the wrappers use them to bound a call by the lease). */
export type CallOptions = { timeoutMs?: number; retries?: number };

/**
 * A result to save with `complete` (README "Saved results"): what duplicates of the key are answered with.
 * The body's bytes are kept exactly (a string is sent as its UTF-8 bytes).
 */
export type ResultToSave = { status: number; headers?: Record<string, string>; body?: Uint8Array | ArrayBuffer | string };

/** A claim request; `attemptId` defaults to a fresh random UUID (kept across this call's retries). */
export type ClaimInput = ClaimRequest;
export type ClaimBatchInput = BatchClaimRequest;


/**
 * A release whose first request failed ambiguously and whose retry found no key: the first request
 * deleted it (or it expired meanwhile). Either way the key is free.
 */
export type ReleaseResult = SettleResult | { source: string; eventId: string; status: "released"; repeat: true };

export type KeywardClient = {
  /** Claims one event: `claimed` (201), `duplicate` (200), `in_flight` or `payload_mismatch` (409). */
  claim(input: ClaimInput): Promise<ClaimResult>;
  /** Claims 1–1000 events of one source in one request; results in input order. */
  claimBatch(input: ClaimBatchInput): Promise<ClaimResult[]>;
  /**
   * Marks a leased claim done (a no-op when it already is, with the same token), saving `result` with the key
   * when given (the source must keep results: a 422 otherwise, and nothing changes).
   */
  complete(input: { source: string; eventId: string; claimToken: string; result?: ResultToSave }, call?: CallOptions): Promise<SettleResult>;
  /**
   * Extends a running lease to `leaseSeconds` from now: a 409 `claim_token_mismatch` when another claim took
   * it over, a 404 when the key is gone.
   */
  extend(input: { source: string; eventId: string; claimToken: string; leaseSeconds: number }, call?: CallOptions): Promise<ExtendResult>;
  /** Deletes a claim so the next delivery is processed. */
  release(input: { source: string; eventId: string; claimToken?: string }): Promise<ReleaseResult>;
  /** The key's state: `alive`, `expired` or `unknown` (needs claims:read). */
  state(input: { source: string; eventId: string }): Promise<KeyState>;
  /**
   * Stores one dead letter (201 { id }). At least once: a retry after an ambiguous failure may store it twice.
   */
  deadLetter(input: DeadLetterInput): Promise<{ id: string }>;
  /** Stores up to 500 dead letters; each item answers `{ id }` or its own `{ error }`. */
  deadLetters(items: DeadLetterInput[]): Promise<BatchItemResult[]>;
};

/**
 * Every failure of a client call. `status` is the HTTP status, or 0 when no answer arrived (`code`
 * `network_error` or `timeout`). `retryable` is true for those and for 502/503/504: the request may have
 * committed and the same call may be retried (the client already did, `retries` times). A 4xx is the
 * caller's to fix and is never retried.
 */
export class KeywardApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;
  readonly retryable: boolean;
  /** From the answer's Retry-After header, when it had one. */
  readonly retryAfterSeconds?: number;

  constructor(o: { status: number; code: string; message: string; details?: unknown; retryAfterSeconds?: number; cause?: unknown }) {
    super(o.message, o.cause === undefined ? undefined : { cause: o.cause });
    this.name = "KeywardApiError";
    this.status = o.status;
    this.code = o.code;
    this.details = o.details;
    this.retryAfterSeconds = o.retryAfterSeconds;
    this.retryable = o.status === 0 || o.status === 502 || o.status === 503 || o.status === 504;
  }
}

export function isKeywardApiError(err: unknown): err is KeywardApiError {
  return err instanceof KeywardApiError;
}

type Answer = { status: number; body: unknown; retryAfterSeconds?: number };

export function createKeywardClient(options: KeywardClientOptions): KeywardClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const doFetch = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const retries = options.retries ?? 2;
  const retryDelayMs = options.retryDelayMs ?? 200;
  if (!/^https?:\/\//.test(baseUrl)) throw new TypeError("createKeywardClient: baseUrl must be an http(s):// URL");
  if (!options.apiKey) throw new TypeError("createKeywardClient: apiKey is required");

  async function once(method: string, path: string, body: string | undefined, timeoutMs: number): Promise<Answer> {
    let res: Response;
    try {
      res = await doFetch(baseUrl + path, {
        method,
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body,
        signal: AbortSignal.timeout(Math.max(1, Math.ceil(timeoutMs))),
      });
    } catch (err) {
      const timedOut = (err as Error)?.name === "TimeoutError" || (err as Error)?.name === "AbortError";
      throw new KeywardApiError({
        status: 0,
        code: timedOut ? "timeout" : "network_error",
        message: timedOut ? `no answer from Keyward within ${timeoutMs} ms` : `could not reach Keyward: ${(err as Error)?.message ?? err}`,
        cause: err,
      });
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      const timedOut = (err as Error)?.name === "TimeoutError" || (err as Error)?.name === "AbortError";
      throw new KeywardApiError({ status: 0, code: timedOut ? "timeout" : "network_error", message: `the answer was cut off: ${(err as Error)?.message}`, cause: err });
    }
    let parsed: unknown = undefined;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    return { status: res.status, body: parsed, ...withRetryAfter(res) };
  }

  function withRetryAfter(res: Response): { retryAfterSeconds?: number } {
    const v = Number(res.headers.get("retry-after"));
    return Number.isFinite(v) && v > 0 ? { retryAfterSeconds: v } : {};
  }

  function toError(a: Answer): KeywardApiError {
    const e = (a.body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
    return new KeywardApiError({
      status: a.status,
      code: typeof e?.code === "string" ? e.code : `http_${a.status}`,
      message: typeof e?.message === "string" ? e.message : `Keyward answered HTTP ${a.status}`,
      details: e?.details,
      retryAfterSeconds: a.retryAfterSeconds,
    });
  }

  /**
   * Sends one request, retrying retryable failures with the same body. `accept` says which answers are
   * results (the rest are errors); `onRetryAnswer` may turn an answer to a retry into a result.
   */
  async function send<T>(
    method: string,
    path: string,
    payload: unknown,
    accept: (a: Answer) => boolean,
    onRetryAnswer?: (a: Answer) => T | undefined,
    call: CallOptions = {},
  ): Promise<T> {
    const body = payload === undefined ? undefined : JSON.stringify(payload);
    const attempts = call.retries ?? retries;
    for (let attempt = 0; ; attempt++) {
      let error: KeywardApiError;
      try {
        const a = await once(method, path, body, call.timeoutMs ?? timeoutMs);
        if (accept(a)) return a.body as T;
        if (attempt > 0 && onRetryAnswer) {
          const resolved = onRetryAnswer(a);
          if (resolved !== undefined) return resolved;
        }
        error = toError(a);
      } catch (err) {
        if (!(err instanceof KeywardApiError)) throw err;
        error = err;
      }
      if (!error.retryable || attempt >= attempts) throw error;
      await sleep(retryDelayMs * 2 ** attempt);
    }
  }

  const ok = (a: Answer) => a.status >= 200 && a.status < 300;
  const isClaimAnswer = (a: Answer) =>
    ok(a) || (a.status === 409 && typeof (a.body as { outcome?: unknown } | undefined)?.outcome === "string");
  const seg = encodeURIComponent;

  return {
    claim: (input) =>
      send<ClaimResult>("POST", "/api/v1/claims", { ...input, attemptId: input.attemptId ?? randomId() }, isClaimAnswer),
    claimBatch: async (input) => {
      const answer = await send<{ results: ClaimResult[] }>(
        "POST",
        "/api/v1/claims/batch",
        { ...input, attemptId: input.attemptId ?? randomId() },
        ok,
      );
      return answer.results;
    },
    complete: ({ result, ...input }, call) =>
      send<SettleResult>("POST", "/api/v1/claims/complete", result ? { ...input, result: toWire(result) } : input, ok, undefined, call),
    extend: (input, call) => send<ExtendResult>("POST", "/api/v1/claims/extend", input, ok, undefined, call),
    release: (input) =>
      send<ReleaseResult>("POST", "/api/v1/claims/release", input, ok, (a) =>
        a.status === 404 ? { source: input.source, eventId: input.eventId, status: "released", repeat: true } : undefined,
      ),
    state: (input) => send<KeyState>("GET", `/api/v1/claims/${seg(input.source)}/${seg(input.eventId)}`, undefined, ok),
    deadLetter: (input) => send<{ id: string }>("POST", "/api/v1/dead-letters", input, ok),
    deadLetters: async (items) => (await send<{ results: BatchItemResult[] }>("POST", "/api/v1/dead-letters/batch", { items }, ok)).results,
  };
}

function toWire(r: ResultToSave): SavedResult {
  const body = typeof r.body === "string" ? new TextEncoder().encode(r.body) : r.body instanceof ArrayBuffer ? new Uint8Array(r.body) : (r.body ?? new Uint8Array());
  return { status: r.status, headers: r.headers ?? {}, bodyBase64: toBase64(body) };
}

function randomId(): string {
  return globalThis.crypto.randomUUID();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
