/**
 * The demo's data tells the truth (issue 23, "Demo that tells the truth"), seeded by lib/demo/seed.ts into a
 * database of this file's own, read through the same functions the API answers with:
 * - nothing processed before it was replayed: each letter of the finished replay was sent, then claimed
 *   (processed) by its receiver, then answered, settled and audited as `replayed`, in that order, and its
 *   event reads as processed at that claim, never before the replay sent it;
 * - and the late-duplicate job still recognises the forced replay's reclaims as replay-driven;
 * - the Overview and its charts count the same runs: the failed-pruning callout's runs of the last 24 hours
 *   are the 24-hour chart's, and the Overview's finished replays of the last day are the chart's replay marks.
 */
import { describe, expect, it } from "vitest";
import { seedDemo } from "@/lib/demo/seed";
import { getEventAnswer } from "@/lib/audit/event";
import { getDeadLetter } from "@/lib/deadletters/list";
import { listAttempts } from "@/lib/replay/attempt-list";
import { getReplay } from "@/lib/replay/replays";
import { listAttemptsQuery } from "@/lib/replay/schema";
import { parseInput } from "@/lib/http/validate";
import { getMetricsHistory } from "@/lib/metrics/history";
import { getOverview } from "@/lib/overview/overview";
import { pruneFailureSummary } from "@/components/overview/prune-failures";
import { runSeries } from "@/components/overview/chart-data";
import { sql } from "@/test/setup/db";


const ms = (iso: string | Date) => (typeof iso === "string" ? Date.parse(iso) : iso.getTime());

describe("the demo's data", { timeout: 300_000 }, () => {
  it("processes no replayed letter before its replay sent it, and its late duplicates are still recognised as the replay's", async () => {
    const seeded = await seedDemo();
    expect(seeded.lateDuplicates).toBeGreaterThan(0);
    const [{ id }] = await sql<{ id: string }>("SELECT id FROM replays WHERE source = 'orders'");
    const replay = await getReplay(id);
    expect(replay).toMatchObject({ status: "completed", outcome: "succeeded", total: 6 });
    for (const item of replay.items) {
      const letter = await getDeadLetter(item.deadLetterId);
      const [attempt, ...more] = (await listAttempts(item.deadLetterId, parseInput(listAttemptsQuery, {}))).items;
      // The letter's page shows the attempt that delivered it.
      expect(more).toEqual([]);
      expect(attempt).toMatchObject({ replayId: id, status: 200, outcome: "delivered" });
      const event = await getEventAnswer({ source: "orders", eventId: item.eventId });
      const claims = event.timeline.filter((r) => r.kind === "claimed" || r.kind === "reclaimed_after_expiry");
      const replayed = event.timeline.filter((r) => r.kind === "replayed");
      expect(replayed).toHaveLength(1);
      const claim = claims.at(-1)!;
      // Sent by the replay, then processed, then answered and recorded: in that order.
      expect(ms(replay.createdAt)).toBeLessThanOrEqual(ms(attempt.at));
      expect(ms(attempt.at)).toBeLessThan(ms(claim.at));
      expect(ms(claim.at)).toBeLessThanOrEqual(ms(replayed[0].at));
      expect(ms(replayed[0].at)).toBeLessThanOrEqual(ms(item.finishedAt!));
      expect(ms(item.finishedAt!)).toBeLessThanOrEqual(ms(replay.finishedAt!));
      // The event reads as processed at the replay's claim: never before the replay sent it.
      expect(event.processedAt).not.toBeNull();
      expect(ms(event.processedAt!)).toBeGreaterThanOrEqual(ms(attempt.at));
      expect(letter.status).toBe("delivered");
      expect(ms(letter.settledAt!)).toBeGreaterThanOrEqual(ms(replayed[0].at));
      expect(letter.key.processed).toBe(true);
    }
    // The forced replay re-drove three events whose keys had expired: each is a late duplicate, via the replay.
    const late = await sql<{ event_id: string; via_replay: boolean }>(
      "SELECT event_id, via_replay FROM late_duplicates WHERE source = 'orders' AND event_id = ANY($1)",
      [replay.items.map((i) => i.eventId)],
    );
    expect(late).toHaveLength(3);
    expect(late.every((l) => l.via_replay)).toBe(true);
  });

  it("counts the same runs on the Overview and in its charts over the same range", async () => {
    const [{ now }] = await sql<{ now: Date }>("SELECT now() AS now");
    const to = now;
    const from = new Date(now.getTime() - 24 * 3600_000);
    const metrics = await getMetricsHistory({ from, to });
    const chartRuns = runSeries(metrics.pruneRuns).reduce((n, r) => n + r.runs, 0);
    const callout = pruneFailureSummary(metrics.pruneRuns);
    // The demo has a failed run in the last 24 hours: the callout shows, with the chart's count of runs,
    // and both are every run of the range in the table (no cap of the last 200).
    expect(callout).not.toBeNull();
    expect(callout!.of).toBe(chartRuns);
    const [{ n, failed }] = await sql<{ n: number; failed: number }>(
      "SELECT count(*)::int AS n, (count(*) FILTER (WHERE stopped = 'error'))::int AS failed FROM prune_runs WHERE started_at >= $1 AND started_at <= $2",
      [from, to],
    );
    expect(chartRuns).toBe(n);
    expect(callout!.failed).toBe(failed);
    // Replays: the Overview's finished in the last day and the chart's replay marks of the same day.
    const overview = await getOverview();
    const finished = Object.values(overview.replays.finishedLastDay ?? {}).reduce((a, b) => a + b, 0);
    const marks = metrics.annotations.filter((a) => a.action === "replay.start");
    expect(finished).toBe(1);
    expect(marks).toHaveLength(finished);
  });
});
