/**
 * GET /api/v1/metrics against a real PostgreSQL: range validation, samples and prune runs of a range,
 * and server-side bucketing of long ranges. Each test writes its rows into a window of the past that no
 * other test file uses (a random hour 8 to 20 days back), and asserts only about that window.
 */
import { describe, expect, it } from "vitest";
import { GET } from "@/app/api/v1/metrics/route";
import { metricsResponseSchema, type MetricsResponse } from "@/lib/metrics/schema";
import { sql } from "@/test/setup/db";
import { makeApiKey, type Called } from "@/test/setup/http";

let readKey: string | undefined;

async function getMetrics(params: Record<string, string>, key?: string | null): Promise<Called> {
  if (key === undefined) key = readKey ??= (await makeApiKey(["read"])).key;
  const url = new URL("http://localhost/api/v1/metrics");
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const res = await GET(new Request(url, { headers: key ? { authorization: `Bearer ${key}` } : {} }));
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/** The start of a random whole hour between 8 and 20 days ago. */
async function quietHour(): Promise<Date> {
  const hoursAgo = 8 * 24 + Math.floor(Math.random() * 12 * 24);
  const [{ at }] = await sql<{ at: Date }>("SELECT date_trunc('hour', now()) - make_interval(hours => $1) AS at", [hoursAgo]);
  return at;
}

const minutes = (base: Date, n: number) => new Date(base.getTime() + n * 60_000);

async function insertSample(at: Date, v: { bytes: number; rows: number; backlog: number; capped?: boolean; claims: number; dups: number }) {
  await sql(
    `INSERT INTO metric_samples (at, table_bytes, index_bytes, estimated_rows, alive_keys, expiry_backlog, backlog_capped,
                                 in_flight, claims, duplicates)
     VALUES ($1, $2::int8, $2::int8 / 4, $3::int8, $3::int8 - $4::int8, $4::int8, $5, 1, $6, $7)`,
    [at, v.bytes, v.rows, v.backlog, v.capped ?? false, v.claims, v.dups],
  );
}

async function insertRun(startedAt: Date, seconds: number | null, rows: number, batches: number, stopped = "drained") {
  await sql(
    `INSERT INTO prune_runs (started_at, finished_at, mode, trigger, batches, rows, stopped)
     VALUES ($1, $1::timestamptz + make_interval(secs => $2), 'batch', 'schedule', $3, $4, $5)`,
    [startedAt, seconds, batches, rows, seconds === null ? null : stopped],
  );
}

describe("GET /api/v1/metrics: validation", () => {
  it("refuses from at or after to, naming from", async () => {
    const r = await getMetrics({ from: "2026-12-02T10:00:00Z", to: "2026-12-02T10:00:00Z" });
    expect(r.status).toBe(422);
    expect(r.body.error.details.fields).toEqual([{ field: "from", message: "must be before to" }]);
  });

  it("refuses a range over 31 days, naming from", async () => {
    const r = await getMetrics({ from: "2026-10-01T00:00:00Z", to: "2026-11-02T00:00:01Z" });
    expect(r.status).toBe(422);
    expect(r.body.error.details.fields[0].field).toBe("from");
    expect(r.body.error.message).toMatch(/31 days/);
  });

  it("refuses a timestamp that is not ISO 8601, naming it", async () => {
    const r = await getMetrics({ to: "yesterday" });
    expect(r.status).toBe(422);
    expect(r.body.error.details.fields[0].field).toBe("to");
  });

  it("needs a session or an API key", async () => {
    expect((await getMetrics({}, null)).status).toBe(401);
  });

  it("answers the last 24 hours by default, every 10 minutes", async () => {
    const r = await getMetrics({});
    expect(r.status).toBe(200);
    const body = metricsResponseSchema.parse(r.body);
    expect(new Date(body.to).getTime() - new Date(body.from).getTime()).toBe(86400_000);
    expect(Math.abs(new Date(body.to).getTime() - Date.now())).toBeLessThan(60_000);
    expect(body.step).toBe(600);
  });
});

describe("GET /api/v1/metrics: samples and prune runs", () => {
  it("answers each minute's sample and each run of a short range, numbers as numbers", async () => {
    const hour = await quietHour();
    await insertSample(minutes(hour, 1), { bytes: 5_000_000_000, rows: 9_000_000, backlog: 123_456, claims: 42, dups: 7 });
    await insertSample(minutes(hour, 3), { bytes: 5_100_000_000, rows: 9_100_000, backlog: 1_000_000, capped: true, claims: 40, dups: 5 });
    await insertRun(minutes(hour, 2), 4, 20_000, 4);
    await insertRun(minutes(hour, 5), null, 1_000, 1);

    const r = await getMetrics({ from: hour.toISOString(), to: minutes(hour, 10).toISOString() });
    expect(r.status).toBe(200);
    const body: MetricsResponse = metricsResponseSchema.parse(r.body);
    expect(body.step).toBe(60);
    expect(body.samples).toEqual([
      {
        at: minutes(hour, 1).toISOString(),
        tableBytes: 5_000_000_000,
        indexBytes: 1_250_000_000,
        estimatedRows: 9_000_000,
        aliveKeys: 8_876_544,
        expiryBacklog: 123_456,
        backlogCapped: false,
        inFlight: 1,
        claims: 42,
        duplicates: 7,
        aliveKeysMin: 8_876_544,
        aliveKeysMax: 8_876_544,
        tableBytesMin: 5_000_000_000,
        tableBytesMax: 5_000_000_000,
      },
      expect.objectContaining({ at: minutes(hour, 3).toISOString(), expiryBacklog: 1_000_000, backlogCapped: true }),
    ]);
    expect(body.pruneRuns).toEqual([
      {
        startedAt: minutes(hour, 2).toISOString(),
        finishedAt: new Date(minutes(hour, 2).getTime() + 4000).toISOString(),
        rows: 20_000,
        batches: 4,
        rowsPerSecond: 5000,
        stopped: "drained",
        runs: 1,
        failed: 0,
        lastError: null,
      },
      {
        startedAt: minutes(hour, 5).toISOString(),
        finishedAt: null,
        rows: 1_000,
        batches: 1,
        rowsPerSecond: null,
        stopped: null,
        runs: 1,
        failed: 0,
        lastError: null,
      },
    ]);
  });

  it("buckets a 40-hour range by 15 minutes: average sizes with their low and high, peak backlog, summed claims and runs", async () => {
    const hour = await quietHour();
    await insertSample(minutes(hour, 0), { bytes: 1000, rows: 100, backlog: 10, claims: 1, dups: 2 });
    await insertSample(minutes(hour, 7), { bytes: 3000, rows: 300, backlog: 50, claims: 3, dups: 4 });
    await insertSample(minutes(hour, 14), { bytes: 2000, rows: 200, backlog: 20, claims: 5, dups: 6 });
    await insertSample(minutes(hour, 15), { bytes: 9000, rows: 900, backlog: 5, claims: 100, dups: 100 });
    await insertRun(minutes(hour, 1), 2, 600, 1);
    await insertRun(minutes(hour, 9), 4, 3000, 3, "time_budget");
    // A failed run in the range's last bucket, at its very end: counted, with its error (the failed-pruning callout's figures).
    await sql(
      `INSERT INTO prune_runs (started_at, finished_at, mode, trigger, batches, rows, stopped, error)
       VALUES ($1, $1::timestamptz + interval '1 second', 'batch', 'schedule', 0, 0, 'error', 'disk full')`,
      [minutes(hour, 15)],
    );

    // 40 hours ending 15 minutes after the hour starts, so the hour's first two buckets are the range's last.
    const to = minutes(hour, 15);
    const from = new Date(to.getTime() - 40 * 3600_000);
    const body = metricsResponseSchema.parse((await getMetrics({ from: from.toISOString(), to: to.toISOString() })).body);
    expect(body.step).toBe(900);
    const mine = body.samples.filter((s) => new Date(s.at) >= hour);
    expect(mine).toEqual([
      {
        at: hour.toISOString(),
        tableBytes: 2000,
        indexBytes: 500,
        estimatedRows: 200,
        aliveKeys: 173,
        expiryBacklog: 50,
        backlogCapped: false,
        inFlight: 1,
        claims: 9,
        duplicates: 12,
        aliveKeysMin: 90,
        aliveKeysMax: 250,
        tableBytesMin: 1000,
        tableBytesMax: 3000,
      },
      expect.objectContaining({ at: minutes(hour, 15).toISOString(), tableBytes: 9000, claims: 100 }),
    ]);
    const runs = body.pruneRuns.filter((p) => new Date(p.startedAt) >= hour);
    expect(runs).toEqual([
      {
        startedAt: minutes(hour, 1).toISOString(),
        finishedAt: new Date(minutes(hour, 9).getTime() + 4000).toISOString(),
        rows: 3600,
        batches: 4,
        rowsPerSecond: 600,
        stopped: "time_budget",
        runs: 2,
        failed: 0,
        lastError: null,
      },
      expect.objectContaining({ startedAt: minutes(hour, 15).toISOString(), runs: 1, failed: 1, stopped: "error", lastError: { at: minutes(hour, 15).toISOString(), message: "disk full" } }),
    ]);
  });
});

describe("GET /api/v1/metrics?source=: one source's figures", () => {
  it("answers the source's keys, its share of the bytes, its claims; samples without its key counts are gaps", async () => {
    const hour = await quietHour();
    const source = `hist-${Math.random().toString(16).slice(2, 10)}`;
    const per = (alive: number, backlog: number, claims: number) =>
      JSON.stringify({ [source]: { claims, duplicates: 1, aliveKeys: alive, expiryBacklog: backlog, inFlight: 2, keysEstimated: false }, other: { claims: 9, duplicates: 9, aliveKeys: 1, expiryBacklog: 0 } });
    await insertSample(minutes(hour, 1), { bytes: 1_000_000, rows: 1000, backlog: 100, claims: 50, dups: 5 });
    await sql("UPDATE metric_samples SET per_source = $2::jsonb WHERE at = $1", [minutes(hour, 1), per(150, 50, 7)]);
    // An older sample that knows only the source's claims (before per-source key counts): a gap.
    await insertSample(minutes(hour, 2), { bytes: 1_000_000, rows: 1000, backlog: 100, claims: 50, dups: 5 });
    await sql("UPDATE metric_samples SET per_source = $2::jsonb WHERE at = $1", [minutes(hour, 2), JSON.stringify({ [source]: { claims: 3, duplicates: 0 } })]);

    const r = await getMetrics({ from: hour.toISOString(), to: minutes(hour, 10).toISOString(), source });
    expect(r.status).toBe(200);
    const body = metricsResponseSchema.parse(r.body);
    expect(body.source).toBe(source);
    expect(body.samples).toEqual([
      {
        at: minutes(hour, 1).toISOString(),
        tableBytes: 200_000, // 200 of the table's 1000 rows
        indexBytes: 50_000,
        estimatedRows: 200,
        aliveKeys: 150,
        expiryBacklog: 50,
        backlogCapped: false,
        inFlight: 2,
        claims: 7,
        duplicates: 1,
        aliveKeysMin: 150,
        aliveKeysMax: 150,
        tableBytesMin: 200_000,
        tableBytesMax: 200_000,
      },
    ]);
    expect((await getMetrics({ source: "Not A Source" })).status).toBe(422);
  });
});

describe("GET /api/v1/metrics: annotations", () => {
  it("marks TTL edits, live-key extends and replays of the range (of the source with ?source=), oldest first", async () => {
    const hour = await quietHour();
    const source = `annot-${Math.random().toString(16).slice(2, 10)}`;
    const action = (at: Date, src: string, detail: object) =>
      sql("INSERT INTO audit_events (at, source, kind, actor, detail) VALUES ($1, $2, 'operator', 'user:ann', $3::jsonb)", [at, src, JSON.stringify(detail)]);
    await action(minutes(hour, 1), source, { action: "source.update", outcome: "ok", before: { ttlSeconds: 29100 }, after: { ttlSeconds: 604800 } });
    await action(minutes(hour, 2), source, { action: "source.extend_keys", outcome: "ok", after: { ttlSeconds: 604800, extended: 412 } });
    await action(minutes(hour, 3), source, { action: "replay.start", outcome: "ok", after: { total: 6, forced: true } });
    await action(minutes(hour, 4), source, { action: "source.update", outcome: "refused" }); // not a change
    await action(minutes(hour, 5), source, { action: "user.create", outcome: "ok" }); // not a configuration change
    await action(minutes(hour, 6), "other-source", { action: "source.update", outcome: "ok", before: { ttlSeconds: 60 }, after: { ttlSeconds: 60 } });

    const body = metricsResponseSchema.parse((await getMetrics({ from: hour.toISOString(), to: minutes(hour, 10).toISOString(), source })).body);
    expect(body.annotations).toEqual([
      { at: minutes(hour, 1).toISOString(), action: "source.update", source, label: `${source} TTL 8h5m → 7d` },
      { at: minutes(hour, 2).toISOString(), action: "source.extend_keys", source, label: `${source}: 412 live keys extended` },
      { at: minutes(hour, 3).toISOString(), action: "replay.start", source, label: `${source} replay of 6 (forced)` },
    ]);
    const all = metricsResponseSchema.parse((await getMetrics({ from: hour.toISOString(), to: minutes(hour, 10).toISOString() })).body);
    expect(all.annotations.map((a) => a.label)).toContain("other-source settings changed");
  });
});
