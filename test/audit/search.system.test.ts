/**
 * Audit search, event answers and CSV export against a real PostgreSQL and a real server: filters,
 * keyset pages that return every row exactly once while rows arrive, 422s for bad filters, the "did we
 * process X" answer for a live key, a pruned key (claimed with a 1 s TTL, pruned by the real pruner) and
 * an unknown event, and a 100k-row export streamed in bounded batches. In a database of its own: the
 * pruner deletes every expired key, and other files keep expired keys on purpose.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportAuditCsv } from "@/lib/audit/export";
import { searchAudit } from "@/lib/audit/search";
import { auditSearchQuery, type AuditRow } from "@/lib/audit/schema";
import { claimEvent } from "@/lib/claims/claim";
import { completeClaim, releaseClaim } from "@/lib/claims/settle";
import { pruneExpiredKeys } from "@/lib/retention/prune";
import { makeSource, sql, uniq, untilDatabaseClockPasses } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { stopServer, type Server } from "@/test/setup/server";
import { call, signedInUser, startTestServer } from "@/test/setup/auth";
import { timePasses } from "@/test/setup/time";

const spawned: Server[] = [];
let baseUrl: string;
let viewer: { cookie: string };
let readKey: string;

beforeAll(async () => {
  ({ baseUrl } = await startTestServer(spawned));
  viewer = await signedInUser(baseUrl, "viewer");
  readKey = (await makeApiKey(["read"])).key;
}, 120_000);

afterAll(async () => {
  for (const s of spawned) await stopServer(s); // before the private database is dropped
});

const search = (q: Record<string, unknown>) => searchAudit(auditSearchQuery.parse(q));
const get = (path: string) => call(baseUrl, "GET", path, { key: readKey });

/** Appends `n` audit rows for `source` in one statement (so they share one `at`: the id breaks the tie). */
async function insertAudit(source: string, n: number, o: { prefix?: string; kind?: string; at?: string } = {}): Promise<void> {
  await sql(
    `INSERT INTO audit_events (at, source, event_id, event_type, kind, actor)
     SELECT ${o.at ?? "now()"}, $1, $2 || i, 'bulk.test', $3, 'apikey:bulk' FROM generate_series(1, $4::int) AS i`,
    [source, o.prefix ?? "bulk-", o.kind ?? "claimed", n],
  );
}

describe("searching the audit history", () => {
  it("filters by source, exact event id, prefix (wildcards literal), type, kind and actor, newest first", async () => {
    const source = await makeSource();
    await claimEvent({ source, eventId: "evt_a1", eventType: "invoice.paid" }, { actor: "apikey:billing" });
    await claimEvent({ source, eventId: "evtXa2", eventType: "invoice.paid" }, { actor: "apikey:billing" });
    const leased = await claimEvent({ source, eventId: "evt_b1", eventType: "charge.failed", leaseSeconds: 60 }, { actor: "apikey:worker" });
    await completeClaim({ source, eventId: "evt_b1", claimToken: leased.claimToken! }, { actor: "apikey:worker" });

    const all = await search({ source });
    expect(all.items.map((r) => [r.eventId, r.kind])).toEqual([
      ["evt_b1", "completed"],
      ["evt_b1", "claimed"],
      ["evtXa2", "claimed"],
      ["evt_a1", "claimed"],
    ]);
    expect(all.next).toBeNull();
    expect(all.items[3]).toMatchObject({ source, eventType: "invoice.paid", actor: "apikey:billing" });
    expect(all.items[3].detail).toHaveProperty("expiresAt");
    expect(all.items[3].at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    expect((await search({ source, eventId: "evt_b1" })).items.map((r) => r.kind)).toEqual(["completed", "claimed"]);
    expect((await search({ eventId: "evt_b1", source })).range.from).toBeTruthy();
    // "_" is literal in a prefix: evtXa2 does not match evt_
    expect((await search({ source, eventIdPrefix: "evt_" })).items.map((r) => r.eventId).sort()).toEqual(["evt_a1", "evt_b1", "evt_b1"]);
    expect((await search({ source, eventType: "charge.failed", kind: "completed" })).items).toHaveLength(1);
    expect((await search({ source, actor: "apikey:billing" })).items).toHaveLength(2);
    expect((await search({ source, kind: "some_future_kind" })).items).toHaveLength(0);
    // an event id alone (no source) is served by the event_id index
    expect((await search({ eventId: "evtXa2" })).items.some((r) => r.source === source)).toBe(true);
  });

  it("returns every row exactly once across pages while new rows keep arriving (ties on `at` broken by id)", async () => {
    const source = await makeSource();
    await insertAudit(source, 250); // one statement: 250 rows with the same `at`
    await insertAudit(source, 30, { at: "now() - interval '1 day'", prefix: "older-" });
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await search({ source, limit: 40, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((r) => r.id));
      cursor = page.next ?? undefined;
      pages++;
      await insertAudit(source, 7, { prefix: `new-${pages}-` }); // newer than everything already paged
    } while (cursor);
    expect(seen.length).toBe(280);
    expect(new Set(seen).size).toBe(280);
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE source = $1", [source]);
    expect(n).toBe(280 + 7 * pages);
    expect(pages).toBe(7);
  });

  it("answers over HTTP for a viewer and a read key, with a next cursor that pages; bad filters are 422 naming the field", async () => {
    const source = await makeSource();
    await insertAudit(source, 5);
    const first = await call(baseUrl, "GET", `/api/v1/audit?source=${source}&limit=3`, { cookie: viewer.cookie });
    expect(first.status).toBe(200);
    expect(first.body.items).toHaveLength(3);
    const second = await get(`/api/v1/audit?source=${source}&limit=3&cursor=${encodeURIComponent(first.body.next)}`);
    expect(second.body.items).toHaveLength(2);
    expect(second.body.next).toBeNull();

    const cases: [string, RegExp][] = [
      ["limit=501", /limit/],
      ["kind=DROP%20TABLE", /kind/],
      ["from=yesterday", /from/],
      ["cursor=abc", /cursor: must be a cursor from a previous page/],
      ["offset=10", /offset|Unrecognized/i],
      [`from=${new Date(Date.now() - 401 * 86400_000).toISOString()}`, /wider than the audit retention of 400 days/],
      ["from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z", /from must be before to/],
    ];
    for (const [qs, message] of cases) {
      const res = await get(`/api/v1/audit?${qs}`);
      expect(res.status, qs).toBe(422);
      expect(res.body.error.message, qs).toMatch(message);
    }
  });
});

describe("GET /api/v1/events/{source}/{eventId}", () => {
  it("a live key: processed, alive until its expiry, with status, duplicates and the timeline", async () => {
    const source = await makeSource(3600);
    const eventId = uniq("live");
    await claimEvent({ source, eventId, eventType: "invoice.paid" }, { actor: "apikey:billing" });
    await claimEvent({ source, eventId, eventType: "invoice.paid" }); // a duplicate: counted on the key, not audited
    const res = await get(`/api/v1/events/${source}/${encodeURIComponent(eventId)}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source, eventId, fate: "alive", status: "done", duplicateCount: 1, eventType: "invoice.paid" });
    expect(res.body.sentence).toMatch(/^Processed at .*; key alive until /);
    expect(res.body.timeline.map((r: AuditRow) => r.kind)).toEqual(["claimed"]);
  });

  it("a key pruned after its TTL still explains as processed at T, key expired at T2 and pruned", async () => {
    const source = await makeSource(1);
    const eventId = uniq("pruned");
    const claimed = await claimEvent({ source, eventId, eventType: "invoice.paid" }, { actor: "apikey:billing" });
    await untilDatabaseClockPasses(claimed.expiresAt); // the 1 s TTL (its end is in the audit history too)
    await pruneExpiredKeys({ trigger: "cli", pauseMs: 0 });
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM dedup_keys WHERE source = $1", [source]);
    expect(n).toBe(0);

    const res = await get(`/api/v1/events/${source}/${eventId}`);
    expect(res.status).toBe(200);
    expect(res.body.fate).toBe("pruned");
    expect(res.body.keyExpiresAt).toBe(claimed.expiresAt);
    expect(res.body.processedAt).toBe(claimed.firstSeenAt);
    expect(res.body.sentence).toBe(`Processed at ${claimed.firstSeenAt}; key expired at ${claimed.expiresAt} and was pruned.`);
    expect(res.body.duplicateCount).toBeNull();
  });

  it("a released key, an unknown event (never seen), and a bad source (422)", async () => {
    const source = await makeSource();
    const eventId = uniq("rel");
    await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 30 });
    await releaseClaim({ source, eventId });
    const released = await get(`/api/v1/events/${source}/${eventId}`);
    expect(released.body.fate).toBe("released");
    expect(released.body.timeline.map((r: AuditRow) => r.kind)).toEqual(["claimed", "released"]);

    const never = await get(`/api/v1/events/${source}/never-${uniq()}`);
    expect(never.status).toBe(200);
    expect(never.body).toMatchObject({ fate: "never_seen", timeline: [] });
    expect(never.body.sentence).toMatch(/^Never seen/);

    expect((await get(`/api/v1/events/Not%20A%20Source/x`)).status).toBe(422);
  });
});

describe("CSV export", () => {
  const ROWS = 100_000;
  let source: string;

  beforeAll(async () => {
    source = await makeSource();
    await insertAudit(source, ROWS);
    await sql(
      `INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
       VALUES ($1, '=HYPERLINK("http://evil")', 'a,b "c"' || chr(10) || 'd', 'claimed', '@actor', '{"note": "-1"}')`,
      [source],
    );
  }, 120_000);

  it("streams every row of a 100k-row search exactly once over HTTP, CSV-escaped and formula-safe", async () => {
    const res = await fetch(`${baseUrl}/api/v1/audit/export?source=${source}`, { headers: { authorization: `Bearer ${readKey}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="keyward-audit-.*\.csv"$/);
    const text = await res.text();
    const lines = text.split("\n");
    expect(lines[0]).toBe("id,at,source,event_id,event_type,kind,actor,detail");
    // The hostile row is newest: quoted where needed, formulas defused, the newline kept inside quotes.
    expect(text).toContain(`,${source},"'=HYPERLINK(""http://evil"")","a,b ""c""\nd",claimed,'@actor,"{""note"":""-1""}"\n`);
    const bulk = lines.filter((l) => l.includes(",bulk.test,"));
    expect(bulk.length).toBe(ROWS);
    expect(new Set(bulk.map((l) => l.split(",")[0])).size).toBe(ROWS);
  }, 120_000);

  it("reads the database only as fast as the response is read: one batch held at a time", async () => {
    // The robust form of "bounded memory": not a heap measurement (noisy on a shared machine) but the
    // structure that bounds it. The stream is pull-based, so after the first chunk has been read only the
    // first batch or two have been fetched, and no batch is ever larger than the batch size.
    const batches: number[] = [];
    const stream = await exportAuditCsv({ source }, { batchSize: 1000, onBatch: (n) => batches.push(n) });
    const reader = stream.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    await timePasses(300, "a reader that pauses: nothing is read ahead meanwhile");
    expect(batches.length).toBeLessThanOrEqual(2);
    let bytes = first.value!.byteLength;
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) bytes += chunk.value.byteLength;
    expect(batches.reduce((a, b) => a + b, 0)).toBe(ROWS + 1);
    expect(Math.max(...batches)).toBe(1000);
    expect(batches.length).toBe(Math.ceil((ROWS + 1) / 1000) + ((ROWS + 1) % 1000 === 0 ? 1 : 0));
    expect(bytes).toBeGreaterThan(ROWS * 40);
  }, 120_000);

  it("a bad filter is a 422 before any CSV is sent; an empty search is just the header", async () => {
    const bad = await get(`/api/v1/audit/export?source=${source}&limit=10`);
    expect(bad.status).toBe(422);
    const empty = await get(`/api/v1/audit/export?source=${source}&eventId=nothing-here`);
    expect(empty.status).toBe(200);
    expect(empty.text).toBe("id,at,source,event_id,event_type,kind,actor,detail\n");
  });
});
