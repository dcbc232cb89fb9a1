/**
 * Partition mode of the dedup table (lib/retention/partitions.ts, keyward_claim_partitioned) against a
 * real PostgreSQL, in a database of this file's own (the table changes shape): enable loses nothing,
 * (source, event_id) stays unique across partition boundaries under concurrency, every writer still
 * works, pruning drops only ended days, and partitions are kept created ahead.
 */
import { connectionDb } from "@/lib/db/transaction";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimEvent, claimEvents } from "@/lib/claims/claim";
import { completeClaim, releaseClaim } from "@/lib/claims/settle";
import { getKeyState } from "@/lib/claims/state";
import { readDedupMode } from "@/lib/claims/mode";
import { pruneExpiredKeys } from "@/lib/retention/prune";
import { disablePartitionMode, enablePartitionMode, ensureDedupPartitions, partitionStatus } from "@/lib/retention/partitions";
import { extendLiveKeys, updateSource } from "@/lib/sources/sources";
import { cliPrincipal } from "@/lib/auth/principal";
import type { PruneOutcome, PruneRunRecord } from "@/lib/retention/prune-schema";
import { makeSource, sql, uniq, fileDatabaseUrl } from "@/test/setup/db";
import { insertKeys } from "@/test/setup/keys";

const DAY = 86400;

let wide: pg.Pool;
beforeAll(() => {
  wide = new pg.Pool({ connectionString: fileDatabaseUrl(), max: 50 });
});
afterAll(async () => {
  await wide?.end();
});

function ran(outcome: PruneOutcome): PruneRunRecord {
  if (!("run" in outcome)) throw new Error(`expected a run, got ${JSON.stringify(outcome)}`);
  return outcome.run;
}

/** The rows of a key, with the partition each lives in. */
async function rowsOf(source: string, eventId: string) {
  return sql<{ part: string; expires_at: Date; status: string; duplicate_count: number }>(
    "SELECT tableoid::regclass::text AS part, expires_at, status, duplicate_count FROM dedup_keys WHERE source = $1 AND event_id = $2",
    [source, eventId],
  );
}

/** The partition a given expiry would be routed to (by the catalog's ranges). */
async function partitionFor(expiresAtSql: string): Promise<string> {
  const [{ name }] = await sql<{ name: string }>(
    `SELECT coalesce((SELECT name FROM keyward_dedup_partitions() WHERE ${expiresAtSql} >= range_start AND ${expiresAtSql} < range_end),
                     'dedup_keys_default') AS name`,
  );
  return name;
}

async function allRows() {
  return sql<Record<string, unknown>>("SELECT * FROM dedup_keys ORDER BY source, event_id");
}

describe("partition mode", () => {
  it("enable converts a table of live and expired keys and loses nothing; a running process notices the new mode", async () => {
    expect(await readDedupMode()).toBe("single");
    const source = await makeSource(5 * DAY);
    const first = await claimEvent({ source, eventId: "before", eventType: "t" }); // caches "single"
    expect(first.outcome).toBe("claimed");
    await insertKeys(source, 40, "now() - interval '3 days' + i * interval '1 hour'", "old");
    await insertKeys(source, 40, "now() + i * interval '1 hour'", "live");
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, lease_expires_at, expires_at, duplicate_count)
       VALUES ($1, 'leased', 't', 'processing', gen_random_uuid(), 'claimed', now() + interval '1 hour', now() + interval '2 days', 4)`,
      [source],
    );
    const before = await allRows();
    expect(before).toHaveLength(82);

    // Behind the library's back, as another instance's `keyward partitions enable` would.
    const [r] = await sql<{ partitions_created: number; rows_moved: number }>("SELECT * FROM keyward_partitions_enable(3)");
    expect(r.rows_moved).toBe(82);

    expect(await readDedupMode()).toBe("partition");
    expect(await allRows()).toEqual(before);
    const [{ relkind }] = await sql<{ relkind: string }>("SELECT relkind::text FROM pg_class WHERE oid = 'dedup_keys'::regclass");
    expect(relkind).toBe("p");

    // This process still believes "single": its ON CONFLICT statement fails (42P10), it re-reads the
    // mode and retries, and the answer is the right one.
    const again = await claimEvent({ source, eventId: "before", eventType: "t" });
    expect(again.outcome).toBe("duplicate");
    expect(await rowsOf(source, "before")).toHaveLength(1);
  });

  it("creates the partitions ahead: every day from today to today + longest TTL + 3 days, no gaps", async () => {
    await makeSource(12 * DAY);
    const created = await ensureDedupPartitions();
    expect(created).toBeGreaterThanOrEqual(7); // 5-day horizon → 12-day horizon
    const { mode, partitions } = await partitionStatus();
    expect(mode).toBe("partition");
    const days = partitions.filter((p) => !p.isDefault && p.rangeStart! >= new Date(Date.now() - DAY).toISOString());
    for (let i = 1; i < days.length; i++) expect(days[i].rangeStart).toBe(days[i - 1].rangeEnd);
    const [{ covered }] = await sql<{ covered: boolean }>(
      "SELECT max(range_end) >= now() + interval '15 days' AS covered FROM keyward_dedup_partitions()",
    );
    expect(covered).toBe(true);
    const [{ today }] = await sql<{ today: boolean }>(
      "SELECT EXISTS (SELECT 1 FROM keyward_dedup_partitions() WHERE now() >= range_start AND now() < range_end) AS today",
    );
    expect(today).toBe(true);
    expect(partitions.filter((p) => p.isDefault)).toHaveLength(1);
    expect(await ensureDedupPartitions()).toBe(0); // idempotent
  });

  it("moves keys that landed in the DEFAULT partition into a day created later", async () => {
    const source = await makeSource(7 * DAY);
    // Past every partition (today + 12 + 3 days): only the DEFAULT partition takes it.
    await insertKeys(source, 3, "now() + interval '25 days'", "far");
    expect((await rowsOf(source, "far1"))[0].part).toBe("dedup_keys_default");
    await makeSource(25 * DAY);
    await ensureDedupPartitions();
    const [row] = await rowsOf(source, "far1");
    expect(row.part).toMatch(/^dedup_keys_p\d{8}$/);
    expect(row.part).toBe(await partitionFor("(now() + interval '25 days')"));
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys_default WHERE source = $1", [source]);
    expect(n).toBe(0);
  });

  it("the same key claimed twice across a partition boundary is a duplicate", async () => {
    const source = await makeSource(7 * DAY);
    const eventId = uniq("e");
    expect((await claimEvent({ source, eventId, eventType: "t" })).outcome).toBe("claimed");
    // Move the stored key to an earlier day's partition than a fresh claim's expiry would land in.
    await sql("UPDATE dedup_keys SET expires_at = now() + interval '2 days' WHERE source = $1 AND event_id = $2", [source, eventId]);
    const [stored] = await rowsOf(source, eventId);
    const fresh = await partitionFor("(now() + interval '7 days')");
    expect(stored.part).not.toBe(fresh);

    const second = await claimEvent({ source, eventId, eventType: "t" });
    expect(second.outcome).toBe("duplicate");
    expect(second.duplicateCount).toBe(1);
    const rows = await rowsOf(source, eventId);
    expect(rows).toHaveLength(1);
    expect(rows[0].part).toBe(stored.part);
    // And in a batch, next to a new key.
    const batch = await claimEvents({ source, events: [{ eventId, eventType: "t" }, { eventId: `${eventId}-b`, eventType: "t" }] });
    expect(batch.map((b) => b.outcome)).toEqual(["duplicate", "claimed"]);
    expect(await rowsOf(source, eventId)).toHaveLength(1);
  });

  it("50 concurrent claims of one key across the boundary (an expired row in an earlier partition) → exactly one claimed, one row", async () => {
    const source = await makeSource(7 * DAY);
    // The first claim on a connection plans the function's statements (over every partition): warm all
    // 50 connections first, so that the race measures claims, not planning inside the key's lock.
    await Promise.all(Array.from({ length: 50 }, () => claimEvent({ source, eventId: uniq("warm"), eventType: "t" }, {}, connectionDb(wide))));
    for (const existing of [true, false]) {
      const eventId = uniq(existing ? "race-expired" : "race-new");
      if (existing) {
        await sql(
          `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
           VALUES ($1, $2, 't', 'done', gen_random_uuid(), 'claimed', now() - interval '1 minute')`,
          [source, eventId],
        );
        expect(await partitionFor("(now() - interval '1 minute')")).not.toBe(await partitionFor("(now() + interval '7 days')"));
      }
      const results = await Promise.all(
        Array.from({ length: 50 }, () => claimEvent({ source, eventId, eventType: "t" }, {}, connectionDb(wide))),
      );
      const outcomes = results.map((r) => r.outcome);
      expect(outcomes.filter((o) => o === "claimed")).toHaveLength(1);
      expect(outcomes.filter((o) => o === "duplicate")).toHaveLength(49);
      if (existing) expect(results.find((r) => r.outcome === "claimed")!.claimKind).toBe("reclaimed_after_expiry");
      const rows = await rowsOf(source, eventId);
      expect(rows).toHaveLength(1);
      expect(rows[0].part).toBe(await partitionFor(`'${(rows[0].expires_at as Date).toISOString()}'::timestamptz`));
      expect(rows[0].duplicate_count).toBe(49);
      const [{ audits }] = await sql<{ audits: number }>(
        "SELECT count(*) AS audits FROM audit_events WHERE source = $1 AND event_id = $2",
        [source, eventId],
      );
      expect(audits).toBe(1);
    }
  }, 90_000); // 100 fresh connections plan the function's statements on a shared 2-core machine

  it("a 2-day source beside a 90-day one: racing claims of both, live keys in the short one's reach and beyond it → one claim per key, one row", async () => {
    const long = await makeSource(90 * DAY);
    const short = await makeSource(2 * DAY);
    await ensureDedupPartitions(); // days up to the 90-day TTL exist
    // The short source's keys: one live and one expired in earlier partitions, one in the DEFAULT-free future
    // near its reach's edge (a 1-day lease on a 2-day TTL: 2 days); the long source's near its 90-day end.
    const nearEdge = uniq("edge");
    const expired = uniq("expired");
    const fresh = uniq("fresh");
    const longKey = uniq("long");
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at) VALUES
         ($1, $2, 't', 'done', gen_random_uuid(), 'claimed', now() + interval '47 hours'),
         ($1, $3, 't', 'done', gen_random_uuid(), 'claimed', now() - interval '1 hour'),
         ($4, $5, 't', 'done', gen_random_uuid(), 'claimed', now() + interval '89 days')`,
      [short, nearEdge, expired, long, longKey],
    );
    const claims = [
      ...Array.from({ length: 12 }, () => claimEvent({ source: short, eventId: nearEdge, eventType: "t" }, {}, connectionDb(wide))),
      ...Array.from({ length: 12 }, () => claimEvent({ source: short, eventId: expired, eventType: "t" }, {}, connectionDb(wide))),
      ...Array.from({ length: 12 }, () => claimEvent({ source: short, eventId: fresh, eventType: "t" }, {}, connectionDb(wide))),
      ...Array.from({ length: 12 }, () => claimEvent({ source: long, eventId: longKey, eventType: "t" }, {}, connectionDb(wide))),
      ...Array.from({ length: 12 }, () => claimEvent({ source: long, eventId: fresh, eventType: "t" }, {}, connectionDb(wide))),
      claimEvents({ source: short, events: [nearEdge, expired, fresh].map((eventId) => ({ eventId, eventType: "t" })) }, {}, connectionDb(wide)),
    ];
    const results = (await Promise.all(claims)).flat();
    const byKey = new Map<string, string[]>();
    for (const r of results) byKey.set(`${r.source}/${r.eventId}`, [...(byKey.get(`${r.source}/${r.eventId}`) ?? []), r.outcome]);
    const claimedOnce = (key: string) => byKey.get(key)!.filter((o) => o === "claimed").length;
    expect(claimedOnce(`${short}/${nearEdge}`)).toBe(0); // it was alive all along
    expect(claimedOnce(`${short}/${expired}`)).toBe(1); // reclaimed once
    expect(claimedOnce(`${short}/${fresh}`)).toBe(1);
    expect(claimedOnce(`${long}/${longKey}`)).toBe(0);
    expect(claimedOnce(`${long}/${fresh}`)).toBe(1); // the same event id under another source is another key
    for (const [src, id] of [[short, nearEdge], [short, expired], [short, fresh], [long, longKey], [long, fresh]]) {
      expect(await rowsOf(src, id), `${src}/${id}`).toHaveLength(1);
    }
  }, 90_000);

  it("lowering a TTL keeps the old reach: a key written under the longer TTL is still found (a duplicate, not a second row)", async () => {
    const source = await makeSource(30 * DAY);
    const eventId = uniq("long-lived");
    await claimEvent({ source, eventId, eventType: "t" }); // expires in 30 days
    await updateSource(source, { retryWindowSeconds: 2 * DAY }, cliPrincipal()); // now a 2-day TTL
    const [{ reach }] = await sql<{ reach: Date }>("SELECT keys_reach_until AS reach FROM sources WHERE name = $1", [source]);
    expect(reach.getTime()).toBeGreaterThan(Date.now() + 29 * DAY * 1000);
    const again = await claimEvent({ source, eventId, eventType: "t" });
    expect(again.outcome).toBe("duplicate");
    expect(await rowsOf(source, eventId)).toHaveLength(1);
  });

  it("overlapping concurrent batches (keys in different orders, some expired in earlier partitions): no deadlock, one claim per key", async () => {
    const source = await makeSource(7 * DAY);
    const ids = Array.from({ length: 40 }, (_, i) => `${uniq("b")}-${i}`);
    // Half of them exist already, expired, in an earlier partition than a fresh expiry.
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
       SELECT $1, id, 't', 'done', gen_random_uuid(), 'claimed', now() - interval '1 hour' FROM unnest($2::text[]) id`,
      [source, ids.filter((_, i) => i % 2 === 0)],
    );
    const batches = Array.from({ length: 12 }, (_, b) => {
      const start = (b * 7) % ids.length;
      const pick = Array.from({ length: 25 }, (_, j) => ids[(start + j) % ids.length]);
      if (b % 2) pick.reverse();
      return pick;
    });
    const results = await Promise.all(
      batches.map((pick) => claimEvents({ source, events: pick.map((eventId) => ({ eventId, eventType: "t" })) }, {}, connectionDb(wide))),
    );
    const claimedPerId = new Map<string, number>();
    for (const r of results.flat()) if (r.outcome === "claimed") claimedPerId.set(r.eventId, (claimedPerId.get(r.eventId) ?? 0) + 1);
    const touched = new Set(batches.flat());
    for (const id of touched) expect(claimedPerId.get(id)).toBe(1);
    const [{ rows, keys }] = await sql<{ rows: number; keys: number }>(
      "SELECT count(*) AS rows, count(DISTINCT event_id) AS keys FROM dedup_keys WHERE source = $1",
      [source],
    );
    expect(keys).toBe(ids.length);
    expect(rows).toBe(ids.length);
  });

  it("reclaim after expiry, lease takeover, complete and release work as in single-table mode", async () => {
    const source = await makeSource(7 * DAY);
    // reclaim after expiry: the row moves from today's partition to a week ahead
    const a = uniq("a");
    await claimEvent({ source, eventId: a, eventType: "t" });
    await sql("UPDATE dedup_keys SET expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, a]);
    const re = await claimEvent({ source, eventId: a, eventType: "t" });
    expect(re).toMatchObject({ outcome: "claimed", claimKind: "reclaimed_after_expiry" });
    expect(await rowsOf(source, a)).toHaveLength(1);
    expect((await getKeyState({ source, eventId: a })).state).toBe("alive");

    // lease takeover, then complete with the new token
    const b = uniq("b");
    const leased = await claimEvent({ source, eventId: b, eventType: "t", leaseSeconds: 60 });
    expect(leased.outcome).toBe("claimed");
    expect((await claimEvent({ source, eventId: b, eventType: "t", leaseSeconds: 60 })).outcome).toBe("in_flight");
    await sql(
      "UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2",
      [source, b],
    );
    const took = await claimEvent({ source, eventId: b, eventType: "t", leaseSeconds: 60 });
    expect(took).toMatchObject({ outcome: "claimed", claimKind: "lease_takeover" });
    await expect(completeClaim({ source, eventId: b, claimToken: leased.claimToken! })).rejects.toMatchObject({ status: 409 });
    const done = await completeClaim({ source, eventId: b, claimToken: took.claimToken! });
    expect(done.status).toBe("done");
    expect((await rowsOf(source, b))[0].status).toBe("done");

    // release, then the retry is claimed again
    const c = uniq("c");
    const held = await claimEvent({ source, eventId: c, eventType: "t", leaseSeconds: 60 });
    await releaseClaim({ source, eventId: c, claimToken: held.claimToken! });
    expect(await rowsOf(source, c)).toHaveLength(0);
    expect((await claimEvent({ source, eventId: c, eventType: "t" })).outcome).toBe("claimed");
    expect(await rowsOf(source, c)).toHaveLength(1);
  });

  it("a claim waiting on a row that the pruner deletes inserts the key; one waiting on a row moved to another partition retries", async () => {
    const source = await makeSource(7 * DAY);
    const waitingClaims = async () => {
      const [{ n }] = await sql<{ n: number }>(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
      );
      return n;
    };
    const holdWhile = async (statement: string, params: unknown[], eventId: string, first?: string) => {
      const c = new pg.Client({ connectionString: fileDatabaseUrl() });
      await c.connect();
      try {
        await c.query("BEGIN");
        if (first) await c.query(first, params.slice(0, 1));
        await c.query(statement, params);
        const claim = claimEvent({ source, eventId, eventType: "t" });
        await expect.poll(waitingClaims, { timeout: 5000, interval: 25 }).toBe(1); // the claim is queued behind the row lock
        await c.query("COMMIT");
        return await claim;
      } finally {
        await c.end();
      }
    };
    // An expired key, deleted by a prune batch while a re-claim waits for its row: the claim is not lost.
    const gone = uniq("pruned");
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
       VALUES ($1, $2, 't', 'done', gen_random_uuid(), 'claimed', now() - interval '1 minute')`,
      [source, gone],
    );
    const afterPrune = await holdWhile("DELETE FROM dedup_keys WHERE source = $1 AND event_id = $2 AND expires_at < now()", [source, gone], gone);
    expect(afterPrune).toMatchObject({ outcome: "claimed", claimKind: "claimed" });
    expect(await rowsOf(source, gone)).toHaveLength(1);

    // A live key moved to a later day's partition (as extend does, widening the source's reach in the same
    // transaction) while a claim waits: 40001, retried, and the retry finds it there.
    const moved = uniq("moved");
    await claimEvent({ source, eventId: moved, eventType: "t" });
    const afterMove = await holdWhile(
      "UPDATE dedup_keys SET expires_at = now() + interval '20 days' WHERE source = $1 AND event_id = $2",
      [source, moved],
      moved,
      "SELECT keyward_widen_source_reach($1, now() + interval '20 days')",
    );
    expect(afterMove.outcome).toBe("duplicate");
    const rows = await rowsOf(source, moved);
    expect(rows).toHaveLength(1);
    expect(rows[0].duplicate_count).toBe(1);
  });

  it("extending a source's live keys moves them to the later day's partition; none is lost or doubled", async () => {
    const source = await makeSource(2 * DAY);
    const ids = Array.from({ length: 30 }, (_, i) => `x${i}`);
    await claimEvents({ source, events: ids.map((eventId) => ({ eventId, eventType: "t" })) });
    const before = await rowsOf(source, "x0");
    await updateSource(source, { retryWindowSeconds: 20 * DAY }, cliPrincipal());
    const r = await extendLiveKeys(source, cliPrincipal());
    expect(r.extended).toBe(30);
    const [{ rows, keys, moved }] = await sql<{ rows: number; keys: number; moved: number }>(
      `SELECT count(*) AS rows, count(DISTINCT event_id) AS keys,
              count(*) FILTER (WHERE expires_at > now() + interval '19 days') AS moved
       FROM dedup_keys WHERE source = $1`,
      [source],
    );
    expect({ rows, keys, moved }).toEqual({ rows: 30, keys: 30, moved: 30 });
    expect((await rowsOf(source, "x0"))[0].part).not.toBe(before[0].part);
    expect((await claimEvent({ source, eventId: "x0", eventType: "t" })).outcome).toBe("duplicate");
  });

  it("pruning drops only the days that have ended, batch-prunes the DEFAULT partition, and records it", async () => {
    ran(await pruneExpiredKeys({ trigger: "cli", actor: "test", pauseMs: 0 })); // start from no ended day
    const source = await makeSource(7 * DAY);
    // Three past days of their own (as partition mode leaves them behind day after day).
    await sql(`DO $$
      DECLARE d date;
      BEGIN
        FOR i IN 1..3 LOOP
          d := (now() AT TIME ZONE 'UTC')::date - i;
          EXECUTE format('CREATE TABLE %I PARTITION OF dedup_keys FOR VALUES FROM (%L) TO (%L)',
            keyward_dedup_partition_name(d), d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
        END LOOP;
      END $$`);
    await insertKeys(source, 100, "date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '3 days' + i * interval '40 minutes'", "past");
    // Expired earlier today: its day has not ended, so its partition stays (the key reads as expired).
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
       VALUES ($1, 'today-expired', 't', 'done', gen_random_uuid(), 'claimed',
               greatest(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', now() - interval '1 minute'))`,
      [source],
    );
    // Older than every partition: in the DEFAULT partition, deleted in batches.
    await insertKeys(source, 5, "now() - interval '30 days'", "stray");
    await insertKeys(source, 20, "now() + i * interval '5 hours'", "live");
    const [{ past }] = await sql<{ past: number }>(
      "SELECT count(*) AS past FROM dedup_keys WHERE source = $1 AND event_id LIKE 'past%' AND expires_at < date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
      [source],
    );
    expect(past).toBeGreaterThan(50);
    await sql("ANALYZE dedup_keys");
    const live = await sql<{ event_id: string }>(
      "SELECT event_id FROM dedup_keys WHERE expires_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' ORDER BY 1",
    );

    const run = ran(await pruneExpiredKeys({ trigger: "api", actor: "test", pauseMs: 0 }));

    expect(run.mode).toBe("partition");
    expect(run.partitionsDropped).toBe(3);
    expect(run.stopped).toBe("drained");
    expect(run.rows).toBe(past + 5); // reltuples after ANALYZE is exact for these small partitions
    const [row] = await sql<{ mode: string; partitions_dropped: number }>("SELECT mode, partitions_dropped FROM prune_runs WHERE id = $1", [run.id]);
    expect(row).toEqual({ mode: "partition", partitions_dropped: 3 });
    const [{ ended }] = await sql<{ ended: number }>(
      "SELECT count(*) AS ended FROM keyward_dedup_partitions() WHERE range_end <= now()",
    );
    expect(ended).toBe(0);
    const left = await sql<{ event_id: string }>("SELECT event_id FROM dedup_keys ORDER BY 1");
    expect(left).toEqual(live);
    expect(left.map((l) => l.event_id)).toContain("today-expired");
    const [{ strays }] = await sql<{ strays: number }>("SELECT count(*) AS strays FROM dedup_keys WHERE event_id LIKE 'stray%'");
    expect(strays).toBe(0);
  });

  it("disable and enable again through the library: the same rows each way, recorded in the action log", async () => {
    const before = await allRows();
    const off = await disablePartitionMode(cliPrincipal());
    expect(off.rowsMoved).toBe(before.length);
    expect(await readDedupMode()).toBe("single");
    expect(await allRows()).toEqual(before);
    await expect(disablePartitionMode(cliPrincipal())).rejects.toMatchObject({ status: 409 });
    const source = await makeSource();
    expect((await claimEvent({ source, eventId: "single-again", eventType: "t" })).outcome).toBe("claimed");

    const on = await enablePartitionMode(cliPrincipal());
    expect(on.rowsMoved).toBe(before.length + 1);
    expect(await readDedupMode()).toBe("partition");
    await expect(enablePartitionMode(cliPrincipal())).rejects.toMatchObject({ status: 409 });
    expect((await claimEvent({ source, eventId: "single-again", eventType: "t" })).outcome).toBe("duplicate");
    const actions = await sql<{ action: string }>(
      "SELECT detail->>'action' AS action FROM audit_events WHERE kind = 'operator' AND detail->>'action' LIKE 'partitions.%' ORDER BY id",
    );
    expect(actions.map((a) => a.action)).toEqual(["partitions.disable", "partitions.enable"]);
  });
});
