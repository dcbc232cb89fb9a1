/**
 * One replay's driver (the executor, executor.ts, runs one per replay it holds): sends the items its Feed
 * (feed.ts) leases, with at most `concurrency` in flight and `ratePerSecond` starts per second, each right
 * after its re-check (classify.ts recheckBeforeSend, on facts at most RECHECK_MAX_AGE_MS old, evaluated at
 * the moment of the send: the database's now at the read plus the time since), through the sender for the
 * destination's scheme (send.ts), and records the results through a SettleQueue (one statement per batch of
 * results). Until the replay is completed, paused, cancelled, its lease lost, or the worker stops; then the
 * items leased but not started are given back and every result is written before the replay's lease is.
 */
import "server-only";
import { query } from "../db/sql";
import { afterAttempt, givenBack, notSent, type ItemResult } from "./attempts";
import { backoffMs } from "./backoff";
import { recheckBeforeSend } from "./classify";
import { replayHeaders } from "./deliver";
import { Feed, type DriveOptions, type Leased, type ReplayRow } from "./feed";
import { RateLimiter } from "./rate-limiter";
import { senderFor, withTimeout, type SendResult } from "./send";
import { SettleQueue } from "./settle-queue";
import { HEARTBEAT_SQL, RELEASE_REPLAY_SQL } from "./worker-sql";

/** Drives one replay until it is completed, paused, cancelled, taken over, or the worker stops. */
export async function driveReplay(r: ReplayRow, o: DriveOptions): Promise<void> {
  const settle = new SettleQueue({ replayId: r.id, workerId: o.workerId, actor: r.created_by, delayMs: o.settleDelayMs, log: o.log });
  const feed = new Feed(r, o, settle);
  const limiter = new RateLimiter(r.rate_per_second);
  const forcedOf = (item: Leased) => r.forced && item.category === "expired_processed";

  const heartbeat = setInterval(
    () =>
      void query<{ status: string }>(HEARTBEAT_SQL, [r.id, o.workerId, o.leaseSeconds])
        .then((rows) => rows[0]?.status !== "running" && feed.stop())
        .catch(() => {}),
    Math.max(500, (o.leaseSeconds * 1000) / 3),
  );
  heartbeat.unref();

  async function send(item: Leased): Promise<ItemResult> {
    const forced = forcedOf(item);
    if (item.body === null) return notSent(item.deadLetterId, "failed", "the dead letter no longer exists", forced);
    try {
      await limiter.take(feed.stopped);
    } catch {
      return givenBack(item.deadLetterId, forced);
    }
    // The re-check, just before the send.
    const facts = await feed.fresh(item);
    const check = recheckBeforeSend(facts.key, facts.fact, facts.now, { category: item.category, forced: r.forced });
    if (!check.safe) return notSent(item.deadLetterId, "skipped_unsafe", check.reason, forced);
    if (feed.stopped.aborted) return givenBack(item.deadLetterId, forced);

    // The destination and secrets as read with the latest batch (a change applies from the next batch on).
    const target = feed.target!;
    let result: SendResult;
    const attempt = { replayId: r.id, deadLetterId: item.deadLetterId, eventId: item.eventId, attempt: item.attempts + 1 };
    const at = new Date();
    try {
      const headers = replayHeaders({ eventId: item.eventId, replayId: r.id, contentType: item.contentType, body: item.body, secret: target.secrets });
      const timeout = withTimeout(o.signal, o.timeoutMs);
      try {
        const destination = target.amqpUrl ?? target.url;
        result = await senderFor(destination)(attempt, destination, headers, item.body, timeout.signal);
      } finally {
        timeout.clear();
      }
    } catch (err) {
      // replayHeaders refuses a secret not in whsec_ form: a configuration failure, not retryable.
      result = { ok: false, retryable: false, status: null, error: (err as Error).message, latencyMs: 0, responseBody: null };
    }
    const next = afterAttempt(result, item.attempts);
    return {
      deadLetterId: item.deadLetterId,
      outcome: next.outcome,
      attempt: next.countsAsAttempt,
      status: result.status,
      error: result.error,
      touchLast: next.countsAsAttempt,
      delayMs: next.outcome === "retry" && next.countsAsAttempt ? backoffMs(item.attempts + 1) : 0,
      forced,
      evidence: next.countsAsAttempt ? { at, destination: target.url, latencyMs: result.latencyMs, responseBody: result.responseBody } : null,
    };
  }

  async function slot(): Promise<void> {
    for (;;) {
      const item = await feed.next();
      if (!item) return;
      feed.inFlight++;
      try {
        settle.add(await send(item));
      } catch (err) {
        settle.add(givenBack(item.deadLetterId, forcedOf(item)));
        feed.fail(err);
      } finally {
        feed.finished(item);
        feed.inFlight--;
        feed.notify();
      }
    }
  }

  let failure: unknown = null;
  try {
    const slots = await Promise.allSettled(Array.from({ length: r.concurrency }, slot));
    failure = feed.error ?? slots.find((s): s is PromiseRejectedResult => s.status === "rejected")?.reason ?? null;
  } finally {
    clearInterval(heartbeat);
    feed.dispose();
    for (const item of feed.takeQueued()) settle.add(givenBack(item.deadLetterId, forcedOf(item)));
    try {
      await settle.drain();
    } catch (err) {
      failure ??= err;
    }
    // Paused, cancelled, completed or shutting down: give the replay back, so any instance can drive it
    // as soon as it runs again (a crash gives nothing back; the lease then lapses).
    await query(RELEASE_REPLAY_SQL, [r.id, o.workerId]).catch(() => {});
  }
  if (failure) throw failure;
}

