/**
 * `makeIdempotent(fn, options)`: any async function run once per event, the shape of AWS Powertools'
 * `makeIdempotent` — a RabbitMQ or BullMQ consumer, a cron task, a Lambda-style handler:
 *
 *   const handle = makeIdempotent(async (msg: Order, { signal }) => charge(msg, { signal }), {
 *     client, source: "orders", eventId: (msg) => msg.id, payload: (msg) => msg,
 *   });
 *   await handle(order);   // the first call runs it; a later call with the same id does not
 *
 * The wrapped function takes one input (pass several values as one object) and gets the run's
 * IdempotencyInfo as its second argument (with the AbortSignal that fires when the lease is lost). It resolves to `fn`'s value when it ran; for an event
 * processed before, to the value the first run saved (`saveResult`: JSON, as Powertools saves it) or, when
 * none was saved, to what `onDuplicate` answers (default undefined). It rejects with an IdempotencyError
 * (`in_flight`, `payload_mismatch`, `lease_lost`, `lease_unconfirmed`; `retryable` says whether to
 * redeliver), with a KeywardApiError when Keyward is unreachable or refuses the claim, or with `fn`'s own
 * error (the claim is released first, so a retry runs it again).
 */
import type { ClaimResult } from "./client";
import { fromBase64 } from "./bytes";
import { payloadHashOf } from "./payload-hash";
import { beginRun, IdempotencyError, reportTo, type IdempotencyInfo, type RunOptions } from "./run";

export type MakeIdempotentOptions<T, D> = RunOptions & {
  /** The event id, from the input. */
  eventId: (input: T) => string;
  /** The event type stored with the key (default "event"). */
  eventType?: string | ((input: T) => string);
  /**
   * What the payload hash is taken of (README "Payload hashes"): bytes or a string as they are, anything
   * else as canonical JSON. A later call with the same id and another payload rejects with payload_mismatch.
   */
  payload?: (input: T) => unknown;
  /** The value a duplicate resolves to when the first run saved none (default undefined). */
  onDuplicate?: (duplicate: { source: string; eventId: string; claim: ClaimResult }) => D | Promise<D>;
};

export function makeIdempotent<T, R, D = undefined>(
  fn: (input: T, info: IdempotencyInfo) => R | Promise<R>,
  options: MakeIdempotentOptions<T, D>,
): (input: T) => Promise<Awaited<R> | D> {
  const report = reportTo(options);
  return async (input: T): Promise<Awaited<R> | D> => {
    const eventId = options.eventId(input);
    if (typeof eventId !== "string" || eventId === "") throw new IdempotencyError("invalid_event", "eventId(input) answered no event id");
    const eventType = (typeof options.eventType === "function" ? options.eventType(input) : options.eventType) ?? "event";
    const payloadHash = options.payload ? await payloadHashOf(options.payload(input)) : undefined;

    const begun = await beginRun(options, { eventId, eventType, ...(payloadHash ? { payloadHash } : {}) });
    switch (begun.kind) {
      case "duplicate": {
        if (begun.result) {
          const text = new TextDecoder().decode(fromBase64(begun.result.bodyBase64));
          return (text === "" ? undefined : JSON.parse(text)) as Awaited<R>;
        }
        return (options.onDuplicate ? await options.onDuplicate({ source: options.source, eventId, claim: begun.claim }) : undefined) as D;
      }
      case "in_flight":
      case "payload_mismatch":
      case "unavailable":
      case "refused":
        throw begun.error;
    }
    const { run } = begun;
    let value: Awaited<R>;
    try {
      value = await fn(input, run.info);
    } catch (err) {
      const lost = run.lost();
      if (lost) throw lost;
      await run.release();
      if (run.info.signal.aborted) throw run.info.signal.reason;
      throw err;
    }
    const lost = run.lost();
    if (lost) throw lost;
    let saved: { status: number; headers: Record<string, string>; body: string } | undefined;
    if (options.saveResult) {
      try {
        saved = { status: 200, headers: { "content-type": "application/json" }, body: value === undefined ? "" : (JSON.stringify(value) ?? "") };
      } catch (err) {
        // Not JSON (a BigInt, a cycle): the work is done, so the run completes without a result (a
        // duplicate then gets onDuplicate's value) rather than leaving its lease kept alive, never settled.
        report(err, "result");
      }
    }
    const completion = await run.complete(saved);
    if (completion.kind === "lost") throw completion.error;
    if (completion.kind === "unconfirmed") report(completion.error, "complete");
    return value;
  };
}
