/**
 * Claim outcomes against the real database, through POST /api/v1/claims (the route handler in-process)
 * and the library: claimed, duplicate, in_flight, lease takeover, payload_mismatch, reclaim after expiry,
 * expiry by the database clock, and the audit row written by the claim statement itself.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { POST as claimRoute } from "@/app/api/v1/claims/route";
import { POST as completeRoute } from "@/app/api/v1/claims/complete/route";
import { claimEvent } from "@/lib/claims/claim";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { HASH_A, HASH_B, auditRows, expireKey, keyRow, lapseLease, makeApiKey, post } from "@/test/setup/http";

let key: string;
let keyName: string;
beforeAll(async () => {
  ({ key, name: keyName } = await makeApiKey(["claims:write"]));
});

const claim = (body: Record<string, unknown>) => post(claimRoute, body, { key });
const dbNow = async () => (await sql<{ t: string }>("SELECT now()::text AS t"))[0].t;

describe("POST /api/v1/claims: first claim", () => {
  it("without a lease: 201 claimed, status done, expiry = database now() + the source's TTL", async () => {
    const ttl = 3 * 86400 + 17;
    const source = await makeSource(ttl);
    const eventId = uniq("evt");
    const before = await dbNow();
    const res = await claim({ source, eventId, eventType: "charge.succeeded" });
    const after = await dbNow();

    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ outcome: "claimed", source, eventId, status: "done", claimKind: "claimed", duplicateCount: 0 });
    expect(res.body.claimToken).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.leaseExpiresAt).toBeUndefined();

    // Measured in SQL: the row's lifetime is exactly the TTL, and it started inside the request's window
    // on the database clock (never the app clock).
    const [check] = await sql<{ exact: boolean; within: boolean; status: string; lease: Date | null; token_ok: boolean }>(
      `SELECT expires_at - received_at = make_interval(secs => $3) AS exact,
              received_at BETWEEN $4::timestamptz AND $5::timestamptz AS within,
              status, lease_expires_at AS lease, claim_token::text = $6 AS token_ok
       FROM dedup_keys WHERE source = $1 AND event_id = $2`,
      [source, eventId, ttl, before, after, res.body.claimToken],
    );
    expect(check).toEqual({ exact: true, within: true, status: "done", lease: null, token_ok: true });

    const row = await keyRow(source, eventId);
    expect(res.body.expiresAt).toBe(row!.expires_at.toISOString());
    expect(res.body.firstSeenAt).toBe(row!.received_at.toISOString());
  });

  it("with leaseSeconds: 201 claimed, status processing, a claimToken and leaseExpiresAt = now() + lease", async () => {
    const source = await makeSource(3600);
    const eventId = uniq("evt");
    const res = await claim({ source, eventId, eventType: "charge", leaseSeconds: 45 });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ outcome: "claimed", status: "processing", claimKind: "claimed" });
    expect(typeof res.body.claimToken).toBe("string");
    const [check] = await sql<{ lease_ok: boolean; ttl_ok: boolean; token_ok: boolean }>(
      `SELECT lease_expires_at - received_at = interval '45 seconds' AS lease_ok,
              expires_at - received_at = interval '3600 seconds' AS ttl_ok,
              claim_token::text = $3 AS token_ok
       FROM dedup_keys WHERE source = $1 AND event_id = $2 AND status = 'processing'`,
      [source, eventId, res.body.claimToken],
    );
    expect(check).toEqual({ lease_ok: true, ttl_ok: true, token_ok: true });
    expect(res.body.leaseExpiresAt).toBe((await keyRow(source, eventId))!.lease_expires_at!.toISOString());
  });

  it("writes exactly one audit row (kind claimed) in the same statement, with the caller as actor", async () => {
    const source = await makeSource(600);
    const eventId = uniq("evt");
    const res = await claim({ source, eventId, eventType: "invoice.paid", payloadHash: HASH_A, leaseSeconds: 30 });
    expect(res.status).toBe(201);
    const audit = await auditRows(source, eventId);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ kind: "claimed", actor: `apikey:${keyName}`, event_type: "invoice.paid" });
    expect(audit[0].detail).toMatchObject({ expiresAt: expect.any(String), leaseExpiresAt: expect.any(String), payloadHash: HASH_A });
    // Same statement ⇒ same transaction ⇒ the same now() stamped the key and its audit row.
    const row = await keyRow(source, eventId);
    expect(audit[0].at.getTime()).toBe(row!.received_at.getTime());
    const [same] = await sql<{ same: boolean }>(
      `SELECT a.at = k.received_at AS same FROM audit_events a JOIN dedup_keys k USING (source, event_id)
       WHERE a.source = $1 AND a.event_id = $2`,
      [source, eventId],
    );
    expect(same.same).toBe(true);
  });

  it("records the library as actor when called in-process", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    expect((await claimEvent({ source, eventId, eventType: "x" })).outcome).toBe("claimed");
    expect((await claimEvent({ source, eventId: uniq("evt"), eventType: "x" }, { actor: "worker-7" })).outcome).toBe("claimed");
    const actors = (await auditRows(source)).map((a) => a.actor).sort();
    expect(actors).toEqual(["library", "worker-7"]);
  });
});

describe("POST /api/v1/claims: duplicates", () => {
  it("200 duplicate each time, counting duplicateCount and advancing last_duplicate_at; no audit rows", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    const first = await claim({ source, eventId, eventType: "charge" });
    expect(first.status).toBe(201);
    const row0 = await keyRow(source, eventId);
    expect(row0!.last_duplicate_at).toBeNull();

    let previous: Date | null = null;
    for (let n = 1; n <= 3; n++) {
      const dup = await claim({ source, eventId, eventType: "charge" });
      expect(dup.status).toBe(200);
      expect(dup.body).toMatchObject({ outcome: "duplicate", status: "done", duplicateCount: n });
      expect(dup.body.claimToken).toBeUndefined(); // never hand out the owner's token
      expect(dup.body.claimKind).toBeUndefined();
      const row = await keyRow(source, eventId);
      expect(row!.duplicate_count).toBe(n);
      expect(row!.last_duplicate_at).not.toBeNull();
      if (previous) expect(row!.last_duplicate_at!.getTime()).toBeGreaterThanOrEqual(previous.getTime());
      previous = row!.last_duplicate_at;
      // A duplicate changes neither the lifetime nor the owner.
      expect(row!.expires_at.getTime()).toBe(row0!.expires_at.getTime());
      expect(row!.received_at.getTime()).toBe(row0!.received_at.getTime());
      expect(row!.claim_token).toBe(row0!.claim_token);
    }
    const [strict] = await sql<{ advanced: boolean }>(
      "SELECT last_duplicate_at > received_at AS advanced FROM dedup_keys WHERE source = $1 AND event_id = $2",
      [source, eventId],
    );
    expect(strict.advanced).toBe(true);
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed"]);
  });

  it("a duplicate of a completed lease claim is 200 duplicate", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    const first = await claim({ source, eventId, eventType: "charge", leaseSeconds: 60 });
    const done = await post(completeRoute, { source, eventId, claimToken: first.body.claimToken }, { key });
    expect(done.status).toBe(200);
    const dup = await claim({ source, eventId, eventType: "charge", leaseSeconds: 60 });
    expect(dup.status).toBe(200);
    expect(dup.body).toMatchObject({ outcome: "duplicate", status: "done", duplicateCount: 1 });
  });

  it("the same id under another source is a different key", async () => {
    const s1 = await makeSource();
    const s2 = await makeSource();
    const eventId = uniq("evt");
    expect((await claim({ source: s1, eventId, eventType: "a" })).status).toBe(201);
    expect((await claim({ source: s2, eventId, eventType: "a" })).status).toBe(201);
  });
});

describe("POST /api/v1/claims: leases", () => {
  it("409 in_flight while another lease runs (no token leaked, no duplicate counted, no audit)", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    const first = await claim({ source, eventId, eventType: "charge", leaseSeconds: 300 });
    expect(first.status).toBe(201);
    const second = await claim({ source, eventId, eventType: "charge", leaseSeconds: 300 });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ outcome: "in_flight", status: "processing", leaseExpiresAt: first.body.leaseExpiresAt });
    expect(second.body.claimToken).toBeUndefined();
    // Without a lease of its own the caller still may not take a running claim.
    const third = await claim({ source, eventId, eventType: "charge" });
    expect(third.status).toBe(409);
    expect(third.body.outcome).toBe("in_flight");
    const row = await keyRow(source, eventId);
    expect(row!.claim_token).toBe(first.body.claimToken);
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed"]);
  });

  it("after the lease lapses without complete, the next claim takes over (201, audit lease_takeover)", async () => {
    const source = await makeSource(7200);
    const eventId = uniq("evt");
    const first = await claim({ source, eventId, eventType: "charge", leaseSeconds: 300 });
    await lapseLease(source, eventId);
    const before = (await keyRow(source, eventId))!;

    const takeover = await claim({ source, eventId, eventType: "charge", leaseSeconds: 120 });
    expect(takeover.status).toBe(201);
    expect(takeover.body).toMatchObject({ outcome: "claimed", claimKind: "lease_takeover", status: "processing" });
    expect(takeover.body.claimToken).toBeDefined();
    expect(takeover.body.claimToken).not.toBe(first.body.claimToken);

    const [check] = await sql<{ lease_ok: boolean; kind: string; token: string }>(
      `SELECT lease_expires_at BETWEEN now() + interval '119 seconds' AND now() + interval '120 seconds' AS lease_ok,
              claim_kind AS kind, claim_token::text AS token
       FROM dedup_keys WHERE source = $1 AND event_id = $2`,
      [source, eventId],
    );
    expect(check).toEqual({ lease_ok: true, kind: "lease_takeover", token: takeover.body.claimToken });
    // The key's lifetime still counts from first receipt.
    const after = (await keyRow(source, eventId))!;
    expect(after.received_at.getTime()).toBe(before.received_at.getTime());

    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed", "lease_takeover"]);

    // The first holder's token is dead now; the new holder can complete.
    const stale = await post(completeRoute, { source, eventId, claimToken: first.body.claimToken }, { key });
    expect(stale.status).toBe(409);
    const ok = await post(completeRoute, { source, eventId, claimToken: takeover.body.claimToken }, { key });
    expect(ok.status).toBe(200);
  });

  it("a takeover without leaseSeconds settles the key as done (no lease left behind)", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    await claim({ source, eventId, eventType: "charge", leaseSeconds: 300 });
    await lapseLease(source, eventId);
    const takeover = await claim({ source, eventId, eventType: "charge" });
    expect(takeover.status).toBe(201);
    expect(takeover.body).toMatchObject({ outcome: "claimed", claimKind: "lease_takeover", status: "done" });
    const row = (await keyRow(source, eventId))!;
    expect(row.status).toBe("done");
    expect(row.lease_expires_at).toBeNull();
  });
});

describe("POST /api/v1/claims: payload hashes", () => {
  it("409 payload_mismatch when both carry a hash and they differ; same hash or no hash is a duplicate", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    expect((await claim({ source, eventId, eventType: "charge", payloadHash: HASH_A })).status).toBe(201);

    const mismatch = await claim({ source, eventId, eventType: "charge", payloadHash: HASH_B });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.outcome).toBe("payload_mismatch");
    expect(mismatch.body.claimToken).toBeUndefined();

    const same = await claim({ source, eventId, eventType: "charge", payloadHash: HASH_A.toUpperCase() });
    expect(same.status).toBe(200);
    expect(same.body.outcome).toBe("duplicate");

    const none = await claim({ source, eventId, eventType: "charge" });
    expect(none.status).toBe(200);
    expect(none.body.outcome).toBe("duplicate");

    const row = (await keyRow(source, eventId))!;
    expect(row.payload_hash).toBe(HASH_A);
    expect(row.duplicate_count).toBe(2); // the mismatch is not a duplicate
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed"]);
  });

  it("a stored key without a hash accepts any hash as a duplicate", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    await claim({ source, eventId, eventType: "charge" });
    const dup = await claim({ source, eventId, eventType: "charge", payloadHash: HASH_B });
    expect(dup.status).toBe(200);
    expect(dup.body.outcome).toBe("duplicate");
  });

  it("a differing hash is a payload_mismatch even while a lease runs or after it lapsed", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    const first = await claim({ source, eventId, eventType: "charge", payloadHash: HASH_A, leaseSeconds: 300 });
    expect((await claim({ source, eventId, eventType: "charge", payloadHash: HASH_B, leaseSeconds: 300 })).body.outcome).toBe(
      "payload_mismatch",
    );
    await lapseLease(source, eventId);
    const res = await claim({ source, eventId, eventType: "charge", payloadHash: HASH_B, leaseSeconds: 300 });
    expect(res.status).toBe(409);
    expect(res.body.outcome).toBe("payload_mismatch");
    expect((await keyRow(source, eventId))!.claim_token).toBe(first.body.claimToken);
  });
});

describe("POST /api/v1/claims: expiry", () => {
  it("a key whose expires_at passed but is not yet pruned is claimed anew (201, audit reclaimed_after_expiry)", async () => {
    const ttl = 86400;
    const source = await makeSource(ttl);
    const eventId = uniq("evt");
    const first = await claim({ source, eventId, eventType: "charge", payloadHash: HASH_A });
    await claim({ source, eventId, eventType: "charge" }); // one duplicate in the first lifetime
    await expireKey(source, eventId);

    const before = await dbNow();
    // Even a different payload hash starts a new lifetime: the old key no longer guards anything.
    const again = await claim({ source, eventId, eventType: "charge.v2", payloadHash: HASH_B });
    const after = await dbNow();
    expect(again.status).toBe(201);
    expect(again.body).toMatchObject({ outcome: "claimed", claimKind: "reclaimed_after_expiry", status: "done", duplicateCount: 0 });
    expect(again.body.claimToken).not.toBe(first.body.claimToken);

    const [check] = await sql<{ exact: boolean; within: boolean; hash: string; type: string; dups: number; last: Date | null }>(
      `SELECT expires_at - received_at = make_interval(secs => $3) AS exact,
              received_at BETWEEN $4::timestamptz AND $5::timestamptz AS within,
              payload_hash AS hash, event_type AS type, duplicate_count AS dups, last_duplicate_at AS last
       FROM dedup_keys WHERE source = $1 AND event_id = $2`,
      [source, eventId, ttl, before, after],
    );
    expect(check).toEqual({ exact: true, within: true, hash: HASH_B, type: "charge.v2", dups: 0, last: null });
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed", "reclaimed_after_expiry"]);

    // And the renewed key deduplicates again.
    const dup = await claim({ source, eventId, eventType: "charge.v2", payloadHash: HASH_B });
    expect(dup.status).toBe(200);
  });

  it("an expired key with a running lease is reclaimed too (the lifetime wins over the lease)", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    await claim({ source, eventId, eventType: "charge", leaseSeconds: 600 });
    await sql(
      "UPDATE dedup_keys SET expires_at = now() - interval '1 second', lease_expires_at = now() + interval '60 seconds' WHERE source = $1 AND event_id = $2",
      [source, eventId],
    );
    const res = await claim({ source, eventId, eventType: "charge" });
    expect(res.status).toBe(201);
    expect(res.body.claimKind).toBe("reclaimed_after_expiry");
  });
});

describe("claim metrics", () => {
  it("flushClaimCounts adds each outcome to claim_counts for the source", async () => {
    const source = await makeSource();
    const a = uniq("evt");
    const b = uniq("evt");
    await claimEvent({ source, eventId: a, eventType: "x", leaseSeconds: 60, payloadHash: HASH_A });
    await claimEvent({ source, eventId: a, eventType: "x" }); // in_flight
    await claimEvent({ source, eventId: a, eventType: "x", payloadHash: HASH_B }); // payload_mismatch
    await claimEvent({ source, eventId: b, eventType: "x" });
    await claimEvent({ source, eventId: b, eventType: "x" }); // duplicate
    await claimEvent({ source, eventId: b, eventType: "x" }); // duplicate
    await flushClaimCounts();
    const [row] = await sql<{ claimed: number; duplicate: number; in_flight: number; payload_mismatch: number }>(
      `SELECT sum(claimed)::int AS claimed, sum(duplicate)::int AS duplicate, sum(in_flight)::int AS in_flight,
              sum(payload_mismatch)::int AS payload_mismatch FROM claim_counts WHERE source = $1`,
      [source],
    );
    expect(row).toEqual({ claimed: 2, duplicate: 2, in_flight: 1, payload_mismatch: 1 });
  });
});
