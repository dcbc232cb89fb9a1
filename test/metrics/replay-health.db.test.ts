/**
 * keyward_replays_running (lib/metrics/prometheus.ts): unfinished replays by source and health, the health
 * decided by lib/replay/health.ts as for the API. A real replay to a receiver answering 500 (the real
 * executor, test/setup/receiver.ts) reads failing; one whose lease a dead worker holds reads stalled; a
 * source with none reads 0 for every health; a cancelled replay leaves the gauge. What the alerts
 * KeywardReplayFailing and KeywardReplayStalled (deploy/prometheus/keyward-rules.yml) read.
 */
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { beforeAll, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { renderMetrics } from "@/lib/metrics/prometheus";
import { startReplayWorker } from "@/lib/replay/executor";
import { createPreflight } from "@/lib/replay/preflight";
import { changeReplay, getReplay, startReplay } from "@/lib/replay/replays";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { startReceiver, type ReceiverOptions } from "@/test/setup/receiver";
import { readyForReplay, seedDeadLetters } from "@/test/setup/replay";
import { useClaimApi } from "@/test/setup/claim-api";

const ACTOR = cliPrincipal();

const claimApi = useClaimApi();
const { receivers, workers } = claimApi;
let claimsKey: string;

beforeAll(async () => {
  claimsKey = (await makeApiKey(["claims:write"])).key;
});

type Family = { name: string; metrics: { labels?: Record<string, string>; value?: string }[] };

/** keyward_replays_running of one source, by health, as GET /metrics renders it. */
async function replaysRunning(source: string): Promise<Record<string, number>> {
  const families = parsePrometheusTextFormat((await renderMetrics()).text) as Family[];
  const family = families.find((f) => f.name === "keyward_replays_running");
  if (!family) throw new Error("no keyward_replays_running");
  return Object.fromEntries(family.metrics.filter((m) => m.labels?.source === source).map((m) => [m.labels!.health, Number(m.value)]));
}

/** keyward_replay_last_finished_timestamp_seconds of one source, by outcome. */
async function lastFinished(source: string): Promise<Record<string, number>> {
  const families = parsePrometheusTextFormat((await renderMetrics()).text) as Family[];
  const family = families.find((f) => f.name === "keyward_replay_last_finished_timestamp_seconds");
  return Object.fromEntries((family?.metrics ?? []).filter((m) => m.labels?.source === source).map((m) => [m.labels!.outcome, Number(m.value)]));
}

/** When the replay finished, Unix seconds, by the database. */
async function finishedAt(replayId: string): Promise<number> {
  const [{ at }] = await sql<{ at: number }>("SELECT extract(epoch FROM finished_at)::float8 AS at FROM replays WHERE id = $1", [replayId]);
  return at;
}

/** A source replaying `n` dead letters to a receiver with these knobs, driven by a worker of this file (or by none). */
async function replay(n: number, rx: Partial<ReceiverOptions>, o: { worker?: boolean; retry?: { maxAttempts: number } } = {}) {
  const source = await makeSource();
  const receiver = await startReceiver({ keywardUrl: claimApi.url(), apiKey: claimsKey, source, ...rx });
  receivers.push(receiver);
  receiver.setSecret(await readyForReplay(source, receiver.url));
  await seedDeadLetters(source, Array.from({ length: n }, (_, i) => `evt-${i}-${uniq()}`));
  const pf = await createPreflight({ source }, ACTOR);
  const { replayId } = await startReplay(
    { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 50, concurrency: 4, retry: o.retry },
    uniq("k"),
    ACTOR,
  );
  if (o.worker !== false) {
    workers.push(startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: 5000, log: () => {}, sources: () => [source] }));
  }
  return { source, replayId };
}

describe("keyward_replays_running", { timeout: 120_000 }, () => {
  it("a source without replays reads 0 for ok, failing and stalled", async () => {
    const source = await makeSource();
    expect(await replaysRunning(source)).toEqual({ ok: 0, failing: 0, stalled: 0 });
  });

  it("a replay to a destination answering 500 reads failing, and paused still failing; cancelled, it leaves the gauge", async () => {
    const { source, replayId } = await replay(6, { failureRate: 1, failStatus: 500, failBody: "database is down" });
    await expect.poll(async () => (await getReplay(replayId)).health.state, { timeout: 60_000, interval: 100 }).toBe("failing");
    expect(await replaysRunning(source)).toEqual({ ok: 0, failing: 1, stalled: 0 });

    await changeReplay(replayId, "pause", ACTOR);
    expect(await replaysRunning(source)).toEqual({ ok: 0, failing: 1, stalled: 0 });

    await changeReplay(replayId, "cancel", ACTOR);
    expect((await getReplay(replayId)).status).toBe("cancelled");
    expect(await replaysRunning(source)).toEqual({ ok: 0, failing: 0, stalled: 0 });
  });

  it("a replay whose lease a dead worker holds reads stalled, and ok once resumed", async () => {
    const { source, replayId } = await replay(3, {}, { worker: false });
    expect(await replaysRunning(source)).toEqual({ ok: 1, failing: 0, stalled: 0 });
    // As if its worker had died two minutes ago (the clocks moved back rather than waited for).
    await sql(
      `UPDATE replays SET worker = 'dead-worker', worker_lease_until = now() + interval '1 hour',
              running_since = now() - interval '2 minutes' WHERE id = $1`,
      [replayId],
    );
    // Its items were queued then too: due since.
    await sql("UPDATE replay_items SET next_attempt_at = now() - interval '2 minutes' WHERE replay_id = $1", [replayId]);
    expect((await getReplay(replayId)).health.state).toBe("stalled");
    expect(await replaysRunning(source)).toEqual({ ok: 0, failing: 0, stalled: 1 });
    await changeReplay(replayId, "pause", ACTOR);
    await changeReplay(replayId, "resume", ACTOR);
    expect(await replaysRunning(source)).toEqual({ ok: 1, failing: 0, stalled: 0 });
    await changeReplay(replayId, "cancel", ACTOR);
  });

  it("one item waiting an hour for its retry does not hide the due items nobody sends: stalled in the API and /metrics", async () => {
    const { source, replayId } = await replay(3, {}, { worker: false });
    // Its worker died two minutes ago, after one item's first attempt failed (next attempt in an hour); the
    // other two were never attempted: due since the start.
    await sql(
      `UPDATE replays SET worker = 'dead-worker', worker_lease_until = now() + interval '1 hour',
              running_since = now() - interval '2 minutes' WHERE id = $1`,
      [replayId],
    );
    // Its items were queued then too: due since.
    await sql("UPDATE replay_items SET next_attempt_at = now() - interval '2 minutes' WHERE replay_id = $1", [replayId]);
    await sql(
      `UPDATE replay_items SET attempts = 1, next_attempt_at = now() + interval '1 hour'
       WHERE (replay_id, dead_letter_id) = (SELECT replay_id, dead_letter_id FROM replay_items WHERE replay_id = $1 ORDER BY dead_letter_id LIMIT 1)`,
      [replayId],
    );
    const r = await getReplay(replayId);
    expect(r.nextAttemptAt).not.toBeNull(); // the waiting item's time is still what the console shows
    expect(r.health.state).toBe("stalled");
    expect(await replaysRunning(source)).toEqual({ ok: 0, failing: 0, stalled: 1 });

    // With every pending item waiting for a retry not due yet, nothing is late: ok.
    await sql("UPDATE replay_items SET attempts = 1, next_attempt_at = now() + interval '1 hour' WHERE replay_id = $1", [replayId]);
    expect((await getReplay(replayId)).health.state).toBe("ok");
    expect(await replaysRunning(source)).toEqual({ ok: 1, failing: 0, stalled: 0 });
    await changeReplay(replayId, "cancel", ACTOR);
  });
});

describe("keyward_replay_last_finished_timestamp_seconds", { timeout: 120_000 }, () => {
  it("a replay whose every delivery failed reads failed at its finish time; one that delivered all, succeeded; a cancelled one, cancelled", async () => {
    const failed = await replay(3, { failureRate: 1, failStatus: 500, failBody: "database is down" }, { retry: { maxAttempts: 1 } });
    await expect.poll(async () => (await getReplay(failed.replayId)).outcome, { timeout: 60_000, interval: 100 }).toBe("failed");
    expect(await lastFinished(failed.source)).toEqual({ failed: await finishedAt(failed.replayId) });

    const delivered = await replay(3, {});
    await expect.poll(async () => (await getReplay(delivered.replayId)).outcome, { timeout: 60_000, interval: 100 }).toBe("succeeded");
    expect(await lastFinished(delivered.source)).toEqual({ succeeded: await finishedAt(delivered.replayId) });

    const cancelled = await replay(2, {}, { worker: false });
    expect(await lastFinished(cancelled.source)).toEqual({});
    await changeReplay(cancelled.replayId, "cancel", ACTOR);
    expect(await lastFinished(cancelled.source)).toEqual({ cancelled: await finishedAt(cancelled.replayId) });
  });

  it("the newest of a source's finished replays counts for each outcome, and only those of the last 24 hours", async () => {
    const first = await replay(2, { failureRate: 1, failStatus: 503 }, { retry: { maxAttempts: 1 } });
    await expect.poll(async () => (await getReplay(first.replayId)).outcome, { timeout: 60_000, interval: 100 }).toBe("failed");
    // A second failed replay of the same source, finished an hour earlier: the newer one counts.
    await seedDeadLetters(first.source, [`evt-late-${uniq()}`]);
    const pf = await createPreflight({ source: first.source }, ACTOR);
    const { replayId: second } = await startReplay(
      { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 50, concurrency: 1, retry: { maxAttempts: 1 } },
      uniq("k"),
      ACTOR,
    );
    await expect.poll(async () => (await getReplay(second)).outcome, { timeout: 60_000, interval: 100 }).toBe("failed");
    await sql("UPDATE replays SET finished_at = finished_at - interval '1 hour' WHERE id = $1", [second]);
    expect(await lastFinished(first.source)).toEqual({ failed: await finishedAt(first.replayId) });
    // Both finished over a day ago: no series for the source any more (the alert's hour is long past).
    await sql("UPDATE replays SET finished_at = now() - interval '25 hours' WHERE id = ANY($1::uuid[])", [[first.replayId, second]]);
    expect(await lastFinished(first.source)).toEqual({});
  });
});
