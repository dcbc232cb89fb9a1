/**
 * The one-event claim of partition mode (keyward_claim_partitioned_one, CLAIM_PARTITIONED_ONE_SQL) beside
 * the array version (keyward_claim_partitioned, used for batches), in a database of this file's own:
 * a claim of one event takes the scalar function and a batch the array one; the two take the same key lock,
 * so single claims racing each other and batches that contain the same key still make exactly one claim,
 * one row and one audit row; and an extension that widens the source's reach and moves the key (as a
 * replay preflight's does) makes either version retry, never insert a second row.
 */
import { connectionDb } from "@/lib/db/transaction";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CLAIM_PARTITIONED_ONE_SQL, CLAIM_PARTITIONED_SQL, claimEvent, claimEvents, claimStatement } from "@/lib/claims/claim";
import type { ClaimResult } from "@/lib/claims/schema";
import { makeSource, sql, uniq, fileDatabaseUrl } from "@/test/setup/db";

const DAY = 86400;

let wide: pg.Pool;
beforeAll(async () => {
  await sql("SELECT keyward_partitions_enable(3)");
  wide = new pg.Pool({ connectionString: fileDatabaseUrl(), max: 50 });
});
afterAll(async () => {
  await wide?.end();
});

async function rowsOf(source: string, eventId: string) {
  return sql<{ part: string; expires_at: Date; status: string; duplicate_count: number }>(
    "SELECT tableoid::regclass::text AS part, expires_at, status, duplicate_count FROM dedup_keys WHERE source = $1 AND event_id = $2",
    [source, eventId],
  );
}

async function auditKindsOf(source: string, eventId: string): Promise<string[]> {
  const rows = await sql<{ kind: string }>("SELECT kind FROM audit_events WHERE source = $1 AND event_id = $2 ORDER BY at", [source, eventId]);
  return rows.map((r) => r.kind);
}

/** The partition a stored expiry belongs in, by the catalog's ranges. */
async function partitionFor(at: Date): Promise<string> {
  const [{ name }] = await sql<{ name: string }>(
    `SELECT coalesce((SELECT name FROM keyward_dedup_partitions() WHERE $1::timestamptz >= range_start AND $1::timestamptz < range_end),
                     'dedup_keys_default') AS name`,
    [at],
  );
  return name;
}

/** Every connection of the wide pool has planned both functions (planning is slow, and would happen inside the key's lock). */
async function warm(source: string) {
  await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      i % 2
        ? claimEvent({ source, eventId: uniq("warm"), eventType: "t" }, {}, connectionDb(wide))
        : claimEvents({ source, events: [{ eventId: uniq("warm"), eventType: "t" }, { eventId: uniq("warm"), eventType: "t" }] }, {}, connectionDb(wide)),
    ),
  );
}

describe("partition mode: the one-event claim", () => {
  it("one event is claimed by keyward_claim_partitioned_one, a batch by keyward_claim_partitioned", async () => {
    const source = await makeSource(7 * DAY);
    const one = [{ first: { eventId: "e", eventType: "t" }, repeats: 0 }];
    expect(claimStatement(source, one, null, "a", "partition").sql).toBe(CLAIM_PARTITIONED_ONE_SQL);
    expect(claimStatement(source, [...one, { first: { eventId: "f", eventType: "t" }, repeats: 0 }], null, "a", "partition").sql).toBe(
      CLAIM_PARTITIONED_SQL,
    );

    // Through the library, counted by PostgreSQL in the caller's own transaction.
    const eventId = uniq("wired");
    const c = new pg.Client({ connectionString: fileDatabaseUrl() });
    await c.connect();
    try {
      await c.query("BEGIN");
      await c.query("SET LOCAL track_functions = 'pl'");
      const calls = async () => {
        const { rows } = await c.query<{ one: string | null; batch: string | null }>(
          `SELECT pg_stat_get_xact_function_calls('keyward_claim_partitioned_one(text, text, text, text, integer, integer, text, text)'::regprocedure) AS one,
                  pg_stat_get_xact_function_calls('keyward_claim_partitioned(text, text[], text[], text[], integer[], integer, text, text[])'::regprocedure) AS batch`,
        );
        return { one: Number(rows[0].one ?? 0), batch: Number(rows[0].batch ?? 0) };
      };
      expect(await claimEvent({ source, eventId, eventType: "t" }, {}, connectionDb(c))).toMatchObject({ outcome: "claimed" });
      expect(await calls()).toEqual({ one: 1, batch: 0 });
      expect(await claimEvent({ source, eventId, eventType: "t" }, {}, connectionDb(c))).toMatchObject({ outcome: "duplicate", duplicateCount: 1 });
      expect(await calls()).toEqual({ one: 2, batch: 0 });
      // Two occurrences of one event are one distinct event: still the scalar function.
      const twice = await claimEvents({ source, events: [{ eventId: `${eventId}-2`, eventType: "t" }, { eventId: `${eventId}-2`, eventType: "t" }] }, {}, connectionDb(c));
      expect(twice.map((r) => r.outcome)).toEqual(["claimed", "duplicate"]);
      expect(await calls()).toEqual({ one: 3, batch: 0 });
      const batch = await claimEvents({ source, events: [{ eventId, eventType: "t" }, { eventId: `${eventId}-b`, eventType: "t" }] }, {}, connectionDb(c));
      expect(batch.map((r) => r.outcome)).toEqual(["duplicate", "claimed"]);
      expect(await calls()).toEqual({ one: 3, batch: 1 });
      await c.query("COMMIT");
    } finally {
      await c.end();
    }
    const rows = await rowsOf(source, eventId);
    expect(rows).toHaveLength(1);
    expect(rows[0].duplicate_count).toBe(2);
  });

  it("the same answers as the array version: payload mismatch, repeats of one attempt, lease takeover, unknown source", async () => {
    const source = await makeSource(7 * DAY);
    const id = uniq("same");
    const first = await claimEvent({ source, eventId: id, eventType: "t", payloadHash: "a".repeat(64), leaseSeconds: 60, attemptId: "att-1" });
    expect(first).toMatchObject({ outcome: "claimed", claimKind: "claimed" });
    // The same attempt again: its own claim back, with its token, nothing counted.
    const again = await claimEvent({ source, eventId: id, eventType: "t", payloadHash: "a".repeat(64), leaseSeconds: 60, attemptId: "att-1" });
    expect(again).toMatchObject({ outcome: "claimed", claimToken: first.claimToken, repeat: true });
    // Another sender while the lease runs: in flight, no token; another payload: a mismatch.
    const other = await claimEvent({ source, eventId: id, eventType: "t", payloadHash: "a".repeat(64), leaseSeconds: 60 });
    expect(other.outcome).toBe("in_flight");
    expect(other.claimToken).toBeUndefined();
    const mismatch = await claimEvent({ source, eventId: id, eventType: "t", payloadHash: "b".repeat(64), leaseSeconds: 60 });
    expect(mismatch.outcome).toBe("payload_mismatch");
    // The lease lapses: taken over (its audit row is the takeover), the row stays one.
    await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, id]);
    const took = await claimEvent({ source, eventId: id, eventType: "t", payloadHash: "a".repeat(64), leaseSeconds: 60 });
    expect(took).toMatchObject({ outcome: "claimed", claimKind: "lease_takeover" });
    expect(took.claimToken).not.toBe(first.claimToken);
    expect(await rowsOf(source, id)).toHaveLength(1);
    expect(await auditKindsOf(source, id)).toEqual(["claimed", "lease_takeover"]);
    // The function answers nothing for an unknown source; the library turns that into a 422.
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM keyward_claim_partitioned_one('no-such-source', 'e', 't', NULL, 0, NULL, 'x', NULL)");
    expect(n).toBe(0);
    await expect(claimEvent({ source: uniq("missing"), eventId: "e", eventType: "t" })).rejects.toMatchObject({ status: 422 });
  });

  it("single claims and batches racing for the same keys (new, expired in an earlier partition, leased) → one claim, one row, one audit row per key", async () => {
    const source = await makeSource(7 * DAY);
    await warm(source);
    for (const scenario of ["new", "expired", "leased"] as const) {
      // 6 keys at once, each claimed by 4 single claims and 4 batches (with a key of their own), sent
      // alternately so that the two versions start together.
      const keys = Array.from({ length: 6 }, () => uniq(scenario));
      if (scenario === "expired") {
        await sql(
          `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
           SELECT $1, id, 't', 'done', gen_random_uuid(), 'claimed', now() - interval '1 minute' FROM unnest($2::text[]) id`,
          [source, keys],
        );
      }
      const leaseSeconds = scenario === "leased" ? 300 : undefined;
      const settled = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          keys.map((eventId) =>
            i % 2
              ? claimEvent({ source, eventId, eventType: "t", leaseSeconds }, {}, connectionDb(wide)).then((r) => [r])
              : claimEvents(
                  { source, leaseSeconds, events: (i % 4 ? [`${eventId}-o${i}`, eventId] : [eventId, `${eventId}-o${i}`]).map((id) => ({ eventId: id, eventType: "t" })) },
                  {}, connectionDb(wide),
                ),
          ),
        ).flat(),
      );
      const results: ClaimResult[] = settled.flat();
      for (const eventId of keys) {
        const forKey = results.filter((r) => r.eventId === eventId);
        expect(forKey).toHaveLength(8);
        const outcomes = forKey.map((r) => r.outcome);
        expect(outcomes.filter((o) => o === "claimed"), `${scenario} ${eventId}`).toHaveLength(1);
        expect(outcomes.filter((o) => o === (scenario === "leased" ? "in_flight" : "duplicate")), scenario).toHaveLength(7);
        const winner = forKey.find((r) => r.outcome === "claimed")!;
        expect(winner.claimKind).toBe(scenario === "expired" ? "reclaimed_after_expiry" : "claimed");

        const rows = await rowsOf(source, eventId);
        expect(rows, `${scenario} ${eventId}`).toHaveLength(1);
        expect(rows[0].part).toBe(await partitionFor(rows[0].expires_at));
        expect(rows[0].status).toBe(scenario === "leased" ? "processing" : "done");
        expect(rows[0].duplicate_count).toBe(scenario === "leased" ? 0 : 7);
        expect(await auditKindsOf(source, eventId)).toEqual([winner.claimKind]);
      }
    }
  }, 90_000);

  it("an extension widening the reach and moving the key while a claim waits: both versions retry and find it (one row)", async () => {
    const source = await makeSource(2 * DAY);
    const lockWaiters = async () => {
      const [{ n }] = await sql<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
      );
      return n;
    };
    for (const shape of ["single", "batch"] as const) {
      const eventId = uniq(`moved-${shape}`);
      await claimEvent({ source, eventId, eventType: "t" });
      const [before] = await rowsOf(source, eventId);
      const c = new pg.Client({ connectionString: fileDatabaseUrl() });
      await c.connect();
      try {
        // As extendPreflight does: widen the reach, then move the key 20 days on, in one transaction.
        await c.query("BEGIN");
        await c.query("SELECT keyward_widen_source_reach($1, now() + interval '20 days')", [source]);
        await c.query("UPDATE dedup_keys SET expires_at = now() + interval '20 days' WHERE source = $1 AND event_id = $2", [source, eventId]);
        const claim =
          shape === "single"
            ? claimEvent({ source, eventId, eventType: "t" }).then((r) => [r])
            : claimEvents({ source, events: [{ eventId, eventType: "t" }, { eventId: `${eventId}-b`, eventType: "t" }] });
        await expect.poll(lockWaiters, { timeout: 5000, interval: 25 }).toBe(1); // queued behind the moving row
        await c.query("COMMIT");
        const [answer] = await claim;
        expect(answer.outcome, shape).toBe("duplicate");
      } finally {
        await c.end();
      }
      const rows = await rowsOf(source, eventId);
      expect(rows, shape).toHaveLength(1);
      expect(rows[0].part).not.toBe(before.part);
      expect(rows[0].part).toBe(await partitionFor(rows[0].expires_at));
      expect(rows[0].duplicate_count).toBe(1);
    }
  });

  it("extensions that widen the reach and move keys, racing single and batch claims of those keys: one row per key", async () => {
    const source = await makeSource(2 * DAY);
    await warm(source);
    const ids = Array.from({ length: 20 }, (_, i) => `${uniq("churn")}-${i}`);
    await claimEvents({ source, events: ids.map((eventId) => ({ eventId, eventType: "t" })) });
    let stop = false;
    const outcomes: string[] = [];
    const CLAIMERS = 8;
    // Claims answered by each claimer, and which claimers are done.
    const answered = Array.from({ length: CLAIMERS }, () => 0);
    const done = Array.from({ length: CLAIMERS }, () => false);
    // Each extension moves every key a day further on (a new partition each time), as a preflight would. A
    // claim retries a moved key a bounded number of times (DEFAULT_SERIALIZATION_ATTEMPTS, lib/db/sql.ts),
    // so the next extension waits until every claimer has answered since the last one: a claim meets at most
    // one extension in flight, however slowly the machine runs it.
    const extender = (async () => {
      let days = 3;
      while (!stop && days < 12) {
        const c = await wide.connect();
        try {
          await c.query("BEGIN");
          await c.query("SELECT keyward_widen_source_reach($1, now() + make_interval(days => $2::int))", [source, days]);
          await c.query(
            "UPDATE dedup_keys SET expires_at = now() + make_interval(days => $2::int) WHERE source = $1 AND event_id = ANY($3::text[])",
            [source, days, ids],
          );
          await c.query("COMMIT");
          days++;
        } catch (err) {
          // A deadlock with a batch claim locking two of these rows: PostgreSQL aborts one side; here, try again.
          await c.query("ROLLBACK");
          if ((err as { code?: string }).code !== "40P01") throw err;
        } finally {
          c.release();
        }
        const since = [...answered];
        const caughtUp = () => answered.every((n, w) => done[w] || n > since[w]);
        await vi.waitFor(() => expect(stop || caughtUp(), "every claimer answered since the last extension").toBe(true), { timeout: 30_000, interval: 5 });
      }
    })();
    const claimers = Array.from({ length: CLAIMERS }, async (_, w) => {
      for (let round = 0; round < 12; round++) {
        const id = ids[(w * 5 + round) % ids.length];
        const got =
          w % 4 === 3
            ? await claimEvents({ source, events: [id, ids[(w + round + 7) % ids.length]].map((eventId) => ({ eventId, eventType: "t" })) }, {}, connectionDb(wide))
            : [await claimEvent({ source, eventId: id, eventType: "t" }, {}, connectionDb(wide))];
        outcomes.push(...got.map((r) => r.outcome));
        answered[w]++;
      }
      done[w] = true;
    });
    try {
      await Promise.all(claimers);
    } finally {
      stop = true;
      await extender;
    }
    // Every key existed before: each claim is a duplicate, wherever the key had moved meanwhile.
    expect(outcomes.length).toBeGreaterThan(90);
    expect(new Set(outcomes)).toEqual(new Set(["duplicate"]));
    const [{ rows, keys }] = await sql<{ rows: number; keys: number }>(
      "SELECT count(*)::int AS rows, count(DISTINCT event_id)::int AS keys FROM dedup_keys WHERE source = $1 AND event_id = ANY($2::text[])",
      [source, ids],
    );
    expect({ rows, keys }).toEqual({ rows: ids.length, keys: ids.length });
  }, 90_000);
});
