/**
 * getOverview against a real PostgreSQL: key states by the database clock, the last hour of
 * claim_counts, per-source rows and totals, the bound on what is counted one by one, and the latest
 * metrics sample. Other test files share the database, so every assertion is about this file's own
 * sources, or about consistency of the whole response.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { prisma } from "@/lib/db/client";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { takeSample } from "@/lib/metrics/sampler";
import { getOverview } from "@/lib/overview/overview";
import { overviewSchema, type Overview, type SourceOverview } from "@/lib/overview/schema";
import { GET } from "@/app/api/v1/overview/route";
import { formatPercent } from "@/components/ui/format";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { seedDeadLetters } from "@/test/setup/replay";

const HASH_A = "a".repeat(64);
const HASH_B = "b".repeat(64);

function sourceIn(o: Overview, name: string): SourceOverview {
  const s = o.sources.find((x) => x.source === name);
  if (!s) throw new Error(`source ${name} missing from the overview`);
  return s;
}

describe("getOverview", () => {
  // busy: claims of every outcome plus raw keys in the states claims cannot reach quickly;
  // quiet: no keys, only hand-written claim_counts buckets at the edges of the hour.
  let busy: string;
  let quiet: string;
  let overview: Overview;
  let before: Date;
  let after: Date;

  beforeAll(async () => {
    busy = uniq("ov-busy");
    await prisma().source.create({
      data: {
        name: busy,
        retryWindowSeconds: 259200,
        queueLagSeconds: 86400,
        clockSkewSeconds: 300,
        replaySeconds: 259200,
        ttlSeconds: 605100,
      },
    });
    quiet = await makeSource(3600, uniq("ov-quiet"));

    const evt = (n: string) => `${busy}-${n}`;
    expect((await claimEvent({ source: busy, eventId: evt("done"), eventType: "t" })).outcome).toBe("claimed");
    expect((await claimEvent({ source: busy, eventId: evt("done"), eventType: "t" })).outcome).toBe("duplicate");
    expect((await claimEvent({ source: busy, eventId: evt("leased"), eventType: "t", leaseSeconds: 600 })).outcome).toBe("claimed");
    expect((await claimEvent({ source: busy, eventId: evt("leased"), eventType: "t", leaseSeconds: 600 })).outcome).toBe("in_flight");
    expect((await claimEvent({ source: busy, eventId: evt("hashed"), eventType: "t", payloadHash: HASH_A })).outcome).toBe("claimed");
    expect((await claimEvent({ source: busy, eventId: evt("hashed"), eventType: "t", payloadHash: HASH_B })).outcome).toBe(
      "payload_mismatch",
    );
    await flushClaimCounts();

    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, lease_expires_at, received_at, expires_at)
       VALUES ($1, $2, 't', 'done', gen_random_uuid(), 'claimed', NULL, now() - interval '8 days', now() - interval '1 second'),
              ($1, $3, 't', 'processing', gen_random_uuid(), 'claimed', now() - interval '1 second', now() - interval '1 hour', now() + interval '1 day'),
              ($4, $2, 't', 'done', gen_random_uuid(), 'claimed', NULL, now(), now() + interval '1 day')`,
      [busy, evt("expired"), evt("stuck"), uniq("ov-deleted")],
    );
    // 58 and 61 minutes back stay on their side of the window even if a minute turns over mid-test.
    await sql(
      `INSERT INTO claim_counts (bucket, source, claimed, duplicate, in_flight, payload_mismatch)
       VALUES (date_trunc('minute', now()) - interval '58 minutes', $1, 7, 2, 0, 0),
              (date_trunc('minute', now()) - interval '61 minutes', $1, 100, 100, 100, 100)`,
      [quiet],
    );

    [{ now: before }] = await sql<{ now: Date }>("SELECT now()");
    // Other test files share the table and may fill it past the default count limit (then alive and
    // expired are left uncounted, tested below): this reading counts everything.
    overview = await getOverview(undefined, { countLimit: 10_000_000 });
    [{ now: after }] = await sql<{ now: Date }>("SELECT now()");
  });

  it("answers in the shape the console parses", () => {
    expect(overviewSchema.safeParse(overview).success).toBe(true);
  });

  it("counts keys alive, in flight, lease lapsed and expired-but-unpruned by the database clock", () => {
    expect(sourceIn(overview, busy).keys).toEqual({ alive: 4, inFlight: 2, leaseLapsed: 1, expired: 1 });
    expect(sourceIn(overview, quiet).keys).toEqual({ alive: 0, inFlight: 0, leaseLapsed: 0, expired: 0 });
  });

  it("sums each claim outcome of the last hour from claim_counts", () => {
    expect(sourceIn(overview, busy).lastHour).toEqual({ claimed: 3, duplicate: 1, inFlight: 1, payloadMismatch: 1 });
  });

  it("leaves out buckets older than the hour", () => {
    expect(sourceIn(overview, quiet).lastHour).toEqual({ claimed: 7, duplicate: 2, inFlight: 0, payloadMismatch: 0 });
  });

  it("reads the time from the database and states the window it counted", () => {
    const asOf = new Date(overview.asOf);
    expect(asOf.getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(asOf.getTime()).toBeLessThanOrEqual(after.getTime());
    const minute = Math.floor(asOf.getTime() / 60_000) * 60_000;
    expect(new Date(overview.lastHourSince).getTime()).toBe(minute - 59 * 60_000);
  });

  it("carries each source's TTL and its parts", () => {
    expect(sourceIn(overview, busy).ttl).toEqual({
      retryWindowSeconds: 259200,
      queueLagSeconds: 86400,
      clockSkewSeconds: 300,
      replaySeconds: 259200,
      ttlSeconds: 605100,
    });
  });

  it("lists configured sources only, by name, and totals them", () => {
    const names = overview.sources.map((s) => s.source);
    expect(names).toEqual([...names].sort());
    expect(names.some((n) => n.startsWith("ov-deleted"))).toBe(false);
    expect(overview.totals.sources).toBe(overview.sources.length);
    // Below the count limit every figure is counted.
    expect(overview.sources.every((s) => s.keys.alive !== null && s.keys.expired !== null)).toBe(true);
    const alive = overview.sources.reduce((n, s) => n + s.keys.alive!, 0);
    const duplicates = overview.sources.reduce((n, s) => n + s.lastHour.duplicate, 0);
    expect(overview.totals.keys.alive).toBe(alive);
    expect(overview.totals.lastHour.duplicate).toBe(duplicates);
  });
});

describe("getOverview on a table larger than it counts", () => {
  it("leaves alive and expired uncounted (null) past the limit; leases are still counted through their index", async () => {
    const source = await makeSource(3600, uniq("ov-big"));
    expect((await claimEvent({ source, eventId: "leased", eventType: "t", leaseSeconds: 600 })).outcome).toBe("claimed");
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
       VALUES ($1, 'old', 't', 'done', gen_random_uuid(), 'claimed', now() - interval '1 second')`,
      [source],
    );
    // A limit of 0: any stored key is "more than the limit".
    const o = await getOverview(undefined, { countLimit: 0 });
    expect(overviewSchema.safeParse(o).success).toBe(true);
    expect(o.countLimit).toBe(0);
    expect(sourceIn(o, source).keys).toEqual({ alive: null, inFlight: 1, leaseLapsed: 0, expired: null });
    expect(o.totals.keys.alive).toBeNull();
    expect(o.totals.keys.expired).toBeNull();
  });

  it("still counts expired keys in total through the expires_at index when only per-source counts are out of reach", async () => {
    // More alive keys than expired ones, and a limit just under the alive count: the table is "too big"
    // to count per source (claims only add alive keys meanwhile), while the expired total fits.
    const source = await makeSource(3600, uniq("ov-tot"));
    const [{ expired }] = await sql<{ expired: number }>("SELECT count(*) AS expired FROM dedup_keys WHERE expires_at <= now()");
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
       SELECT $1, 'alive-' || i, 't', 'done', gen_random_uuid(), 'claimed', now() + interval '1 hour' FROM generate_series(1, $2) i`,
      [source, expired + 100],
    );
    const [{ alive }] = await sql<{ alive: number }>("SELECT count(*) AS alive FROM dedup_keys WHERE expires_at > now()");
    const o = await getOverview(undefined, { countLimit: alive - 1 });
    expect(o.totals.keys.alive).toBeNull();
    expect(sourceIn(o, source).keys.expired).toBeNull();
    expect(o.totals.keys.expired).toEqual(expect.any(Number));
  });

  it("carries the sampler's newest sample for the estimates", async () => {
    let taken;
    do taken = await takeSample();
    while (taken.outcome === "locked");
    const o = await getOverview();
    expect(o.latestSample).not.toBeNull();
    expect(new Date(o.latestSample!.at).getTime()).toBeGreaterThanOrEqual(taken.at.getTime());
    expect(o.latestSample!.estimatedRows).toBeGreaterThanOrEqual(o.latestSample!.aliveKeys);
  });
});

describe("GET /api/v1/overview", () => {
  it("answers a caller allowed to read (an API key with scope read) in the console's shape", async () => {
    const { key } = await makeApiKey(["read"]);
    const res = await GET(new Request("http://localhost/api/v1/overview", { headers: { authorization: `Bearer ${key}` } }));
    expect(res.status).toBe(200);
    expect(overviewSchema.safeParse(await res.json()).success).toBe(true);
  });

  it("refuses an anonymous caller (401) and a key that may not read (403)", async () => {
    const anon = await GET(new Request("http://localhost/api/v1/overview"));
    expect(anon.status).toBe(401);
    expect(((await anon.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    const { key } = await makeApiKey(["claims:write"]);
    const denied = await GET(new Request("http://localhost/api/v1/overview", { headers: { authorization: `Bearer ${key}` } }));
    expect(denied.status).toBe(403);
  });

  it("refuses an invalid API key with the one error body", async () => {
    const res = await GET(new Request("http://localhost/api/v1/overview", { headers: { authorization: "Bearer nope" } }));
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
  });
});

describe("GET /api/v1/overview?limit&q: which sources get rows", () => {
  let prefix: string;
  let key: string;
  const read = async (qs: string) => {
    const res = await GET(new Request(`http://localhost/api/v1/overview?${qs}`, { headers: { authorization: `Bearer ${key}` } }));
    return { status: res.status, body: (await res.json()) as Overview & { error?: { details: { fields: { field: string; message: string }[] } } } };
  };
  const names = (o: Overview) => o.sources.map((s) => s.source);

  beforeAll(async () => {
    ({ key } = await makeApiKey(["read"]));
    prefix = uniq("ov-pick");
    for (const n of ["a", "b", "c"]) await makeSource(3600, `${prefix}-${n}`);
    // b the busiest, then c; a none.
    for (let i = 0; i < 5; i++) await claimEvent({ source: `${prefix}-b`, eventId: `e${i}`, eventType: "t" });
    for (let i = 0; i < 2; i++) await claimEvent({ source: `${prefix}-c`, eventId: `e${i}`, eventType: "t" });
    await flushClaimCounts();
  });

  it("q keeps the sources whose name contains it, in any case, by name; totals still cover every source", async () => {
    const { status, body } = await read(`q=${encodeURIComponent(`  ${prefix.toUpperCase()} `)}`);
    expect(status).toBe(200);
    expect(overviewSchema.parse(body)).toBeTruthy();
    expect(names(body)).toEqual([`${prefix}-a`, `${prefix}-b`, `${prefix}-c`]);
    expect(body.sourcesMatching).toBe(3);
    expect(body.totals.sources).toBeGreaterThan(3); // other files' sources are in the totals, not in the rows
    expect(body.totals.lastHour.claimed).toBeGreaterThanOrEqual(7);
  });

  it("past limit: the busiest first (last hour's deliveries, then alive keys), and how many match", async () => {
    const { body } = await read(`q=${prefix}&limit=2`);
    expect(names(body)).toEqual([`${prefix}-b`, `${prefix}-c`]);
    expect(body.sourcesMatching).toBe(3);
    const one = await read("limit=1");
    expect(one.body.sources).toHaveLength(1);
    expect(one.body.sourcesMatching).toBe(one.body.totals.sources); // no q: every source matches, in the same read
    const none = await read(`q=${prefix}-zzz`);
    expect(none.body).toMatchObject({ sources: [], sourcesMatching: 0 });
  });

  it("without limit, a row for every source (the answer before limit existed)", async () => {
    const { body } = await read("");
    expect(body.sources).toHaveLength(body.totals.sources);
    expect(body.sourcesMatching).toBe(body.totals.sources);
    expect(names(body)).toEqual(expect.arrayContaining([`${prefix}-a`, `${prefix}-b`, `${prefix}-c`]));
  });

  it("refuses a limit that is not a whole number from 1 to 1000, and a q PostgreSQL could not hold, naming the field (422)", async () => {
    for (const [qs, field, message] of [
      ["limit=0", "limit", /1/],
      ["limit=1001", "limit", /at most 1000/],
      ["limit=2.5", "limit", /whole number/],
      ["limit=many", "limit", /number/],
      ["q=a%00b", "q", /NUL/],
      [`q=${"x".repeat(201)}`, "q", /200/],
    ] as const) {
      const { status, body } = await read(qs);
      expect(status, qs).toBe(422);
      expect(body.error!.details.fields.map((f) => f.field), qs).toEqual([field]);
      expect(body.error!.details.fields[0].message, qs).toMatch(message);
    }
  });
});

describe("overview display helpers", () => {
  it("formats a share without dividing by zero or rounding a real figure to 0%", () => {
    expect(formatPercent(0, 0)).toBe("—");
    expect(formatPercent(1, 2000)).toBe("<0.1%");
    expect(formatPercent(1, 3)).toBe("33%");
    expect(formatPercent(1, 40)).toBe("2.5%");
  });
});

describe("getOverview: dead letters", () => {
  it("counts the pending letters and names when the oldest failed; a delivered one is not pending", async () => {
    const source = await makeSource(3600, uniq("ov-dl"));
    const before = (await getOverview()).deadLetters!;
    const failedAt = "2020-01-02T03:04:05.000Z"; // older than any other test's letters
    const [a] = await seedDeadLetters(source, [uniq("e"), uniq("e"), uniq("e")], { failedAt });
    await sql("UPDATE dead_letters SET status = 'delivered', settled_at = now() WHERE id = $1", [a]);
    const after = (await getOverview()).deadLetters!;
    expect(after.pending).toBeGreaterThanOrEqual(before.pending + 2);
    expect(after.oldestPendingAt).toBe(failedAt);
  });
});

