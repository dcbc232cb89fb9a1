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
import { z } from "zod";
import { execute, query } from "@/lib/db/sql";
import { afterAttempt, givenBack, notSent, retryOrGiveUp, type ItemResult } from "./attempts";
import { backoffMs, type RetrySchedule } from "./backoff";
import { recheckBeforeSend } from "./classify";
import { readPayload } from "@/lib/deadletters/payload-store";
import { replayHeaders } from "./deliver";
import { maskHeaders } from "./evidence";
import { Feed, type DriveOptions, type Leased, type ReplayRow } from "./feed";
import { RateLimiter } from "./rate-limiter";
import { senderFor, withTimeout, type SendResult } from "./send";
import { SettleQueue } from "./settle-queue";
import { HEARTBEAT_SQL, RELEASE_REPLAY_SQL } from "./worker-sql";
import { startHeartbeat } from "@/lib/jobs/heartbeat";

/** Drives one replay until it is completed, paused, cancelled, taken over, or the worker stops. */
export async function driveReplay(r: ReplayRow, o: DriveOptions): Promise<void> {
  const settle = new SettleQueue({ replayId: r.id, workerId: o.workerId, actor: r.created_by, delayMs: o.settleDelayMs, log: o.log });
  const feed = new Feed(r, o, settle);
  const limiter = new RateLimiter(r.rate_per_second);
  const forcedOf = (item: Leased) => r.forced && item.category === "expired_processed";
  const schedule: RetrySchedule = { maxAttempts: r.retry_max_attempts, initialDelayMs: r.retry_initial_ms, maxDelayMs: r.retry_max_delay_ms };

  // The replay's lease, renewed while it is driven (a heartbeat, lib/jobs/heartbeat.ts); a replay no longer
  // running here (paused, cancelled, taken over) stops the feed.
  const heartbeat = startHeartbeat(Math.max(500, (o.leaseSeconds * 1000) / 3), async () => {
    const rows = await query(z.object({ status: z.string() }), HEARTBEAT_SQL, [r.id, o.workerId, o.leaseSeconds]);
    if (rows[0]?.status !== "running") feed.stop();
  });

  async function send(item: Leased): Promise<ItemResult> {
    const forced = forcedOf(item);
    const gone = () => notSent(item.deadLetterId, "failed", "the dead letter no longer exists", forced);
    if (item.payloadBytes === null) return gone();
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
    // A payload over 1 MiB was not leased with the batch: read now, into one buffer, and dropped after the send.
    const body = item.body ?? (await readPayload(item.deadLetterId, item.payloadBytes));
    if (body === null) return gone();
    let result: SendResult;
    let sentHeaders: Record<string, string> = {};
    const attempt = { replayId: r.id, deadLetterId: item.deadLetterId, eventId: item.eventId, attempt: item.attempts + 1 };
    const at = new Date();
    try {
      const headers = replayHeaders({ eventId: item.eventId, replayId: r.id, contentType: item.contentType, body, secret: target.secrets });
      sentHeaders = headers;
      const timeout = withTimeout(o.signal, o.timeoutMs);
      try {
        const destination = target.brokerUrl ?? target.url;
        result = await senderFor(destination)(attempt, destination, headers, body, timeout.signal);
      } finally {
        timeout.clear();
      }
    } catch (err) {
      // replayHeaders refuses a secret not in whsec_ form: a configuration failure, not retryable.
      result = { ok: false, retryable: false, status: null, error: (err as Error).message, latencyMs: 0, responseBody: null };
    }
    const next = afterAttempt(result, item.attempts, schedule.maxAttempts);
    let outcome = next.outcome;
    let error = result.error;
    let delayMs = 0;
    if (next.outcome === "retry" && next.countsAsAttempt) {
      // The replay's schedule, bounded by the key's life: a retry after the key expires is unsafe.
      const now = new Date(facts.now.getTime() + (Date.now() - at.getTime()));
      const decided = retryOrGiveUp(backoffMs(item.attempts + 1, Math.random, schedule), now, facts.key?.expiresAt ?? null, forced);
      if (decided.retry) delayMs = decided.delayMs;
      else {
        outcome = "failed";
        error = `${result.error}; ${decided.reason}`;
      }
    }
    return {
      deadLetterId: item.deadLetterId,
      outcome,
      attempt: next.countsAsAttempt,
      status: result.status,
      error,
      touchLast: next.countsAsAttempt,
      delayMs,
      forced,
      evidence: next.countsAsAttempt
        ? {
            at,
            destination: target.url,
            latencyMs: result.latencyMs,
            responseBody: result.responseBody,
            requestHeaders: maskHeaders({ ...sentHeaders, "content-length": String(body.byteLength) }),
            responseHeaders: result.responseHeaders ?? null,
          }
        : null,
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
    await heartbeat.stop();
    feed.dispose();
    await feed.quiesce();
    for (const item of feed.takeQueued()) settle.add(givenBack(item.deadLetterId, forcedOf(item)));
    try {
      await settle.drain();
    } catch (err) {
      failure ??= err;
    }
    // Paused, cancelled, completed or shutting down: give the replay back, so any instance can drive it
    // as soon as it runs again (a crash gives nothing back; the lease then lapses).
    await execute(RELEASE_REPLAY_SQL, [r.id, o.workerId]).catch(() => {});
  }
  if (failure) throw failure;
}

