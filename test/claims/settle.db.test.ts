/** POST /api/v1/claims/complete and /release, and GET /api/v1/claims/{source}/{eventId}. */
import { beforeAll, describe, expect, it } from "vitest";
import { POST as claimRoute } from "@/app/api/v1/claims/route";
import { POST as completeRoute } from "@/app/api/v1/claims/complete/route";
import { POST as releaseRoute } from "@/app/api/v1/claims/release/route";
import { GET as stateRoute } from "@/app/api/v1/claims/[source]/[eventId]/route";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { auditRows, expireKey, getState, isErrorBody, keyRow, makeApiKey, post } from "@/test/setup/http";

let key: string;
let keyName: string;
let readKey: string;
beforeAll(async () => {
  ({ key, name: keyName } = await makeApiKey(["claims:write"]));
  ({ key: readKey } = await makeApiKey(["claims:read"]));
});

const claim = (body: Record<string, unknown>) => post(claimRoute, body, { key });
const complete = (body: Record<string, unknown>) => post(completeRoute, body, { key });
const release = (body: Record<string, unknown>) => post(releaseRoute, body, { key });
const OTHER_TOKEN = "00000000-0000-4000-8000-000000000000";

async function leased(ttl = 3600) {
  const source = await makeSource(ttl);
  const eventId = uniq("evt");
  const res = await claim({ source, eventId, eventType: "charge", leaseSeconds: 300 });
  expect(res.status).toBe(201);
  return { source, eventId, token: res.body.claimToken as string };
}

describe("POST /api/v1/claims/complete", () => {
  it("marks the claim done, clears the lease, keeps the lifetime, audits completed", async () => {
    const { source, eventId, token } = await leased();
    const before = (await keyRow(source, eventId))!;
    const res = await complete({ source, eventId, claimToken: token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source, eventId, status: "done", expiresAt: before.expires_at.toISOString() });
    const after = (await keyRow(source, eventId))!;
    expect(after.status).toBe("done");
    expect(after.lease_expires_at).toBeNull();
    expect(after.expires_at.getTime()).toBe(before.expires_at.getTime());
    const audit = await auditRows(source, eventId);
    expect(audit.map((a) => a.kind)).toEqual(["claimed", "completed"]);
    expect(audit[1].actor).toBe(`apikey:${keyName}`);
    // Now the key is a plain duplicate, not in flight.
    expect((await claim({ source, eventId, eventType: "charge" })).status).toBe(200);
  });

  it("completing twice with the right token is a no-op (one completed audit row)", async () => {
    const { source, eventId, token } = await leased();
    expect((await complete({ source, eventId, claimToken: token })).status).toBe(200);
    expect((await complete({ source, eventId, claimToken: token })).status).toBe(200);
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed", "completed"]);
  });

  it("completing a claim made without a lease (already done) is a no-op with its token, 409 with another", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    const res = await claim({ source, eventId, eventType: "charge" });
    expect((await complete({ source, eventId, claimToken: res.body.claimToken })).status).toBe(200);
    expect((await complete({ source, eventId, claimToken: OTHER_TOKEN })).status).toBe(409);
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed"]);
  });

  it("a wrong token → 409 claim_token_mismatch; the claim stays in flight", async () => {
    const { source, eventId } = await leased();
    const res = await complete({ source, eventId, claimToken: OTHER_TOKEN });
    expect(res.status).toBe(409);
    expect(isErrorBody(res.body)).toBe(true);
    expect(res.body.error.code).toBe("claim_token_mismatch");
    expect((await keyRow(source, eventId))!.status).toBe("processing");
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed"]);
  });

  it("an unknown key → 404 key_not_found", async () => {
    const source = await makeSource();
    const res = await complete({ source, eventId: uniq("nope"), claimToken: OTHER_TOKEN });
    expect(res.status).toBe(404);
    expect(isErrorBody(res.body)).toBe(true);
    expect(res.body.error.code).toBe("key_not_found");
  });

  it("an expired key → 404 even with the right token", async () => {
    const { source, eventId, token } = await leased();
    await expireKey(source, eventId);
    const res = await complete({ source, eventId, claimToken: token });
    expect(res.status).toBe(404);
    expect(res.body.error.message).toMatch(/expired/);
  });

  it("a malformed token → 422 naming claimToken", async () => {
    const { source, eventId } = await leased();
    const res = await complete({ source, eventId, claimToken: "not-a-uuid" });
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(["claimToken"]);
  });
});

describe("POST /api/v1/claims/release", () => {
  it("deletes the key and audits released; the sender's retry is then claimed anew (201)", async () => {
    const { source, eventId, token } = await leased();
    const res = await release({ source, eventId, claimToken: token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source, eventId, status: "released" });
    expect(await keyRow(source, eventId)).toBeUndefined();
    const audit = await auditRows(source, eventId);
    expect(audit.map((a) => a.kind)).toEqual(["claimed", "released"]);
    expect(audit[1].detail).toEqual({ statusBefore: "processing", withToken: true });

    const again = await claim({ source, eventId, eventType: "charge", leaseSeconds: 60 });
    expect(again.status).toBe(201);
    expect(again.body.claimKind).toBe("claimed");
    expect(again.body.claimToken).not.toBe(token);
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed", "released", "claimed"]);
  });

  it("a wrong token → 409 and the key survives", async () => {
    const { source, eventId } = await leased();
    const res = await release({ source, eventId, claimToken: OTHER_TOKEN });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("claim_token_mismatch");
    expect(await keyRow(source, eventId)).toBeDefined();
    expect((await claim({ source, eventId, eventType: "charge" })).status).toBe(409);
  });

  it("an unknown key → 404", async () => {
    const source = await makeSource();
    const res = await release({ source, eventId: uniq("nope"), claimToken: OTHER_TOKEN });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("key_not_found");
    const res2 = await release({ source, eventId: uniq("nope") });
    expect(res2.status).toBe(404);
  });

  it("without a token releases unconditionally (operator path), recording withToken=false", async () => {
    const { source, eventId } = await leased();
    const res = await release({ source, eventId });
    expect(res.status).toBe(200);
    expect(await keyRow(source, eventId)).toBeUndefined();
    expect((await auditRows(source, eventId)).at(-1)!.detail).toEqual({ statusBefore: "processing", withToken: false });
  });

  it("releasing twice: the second is a 404", async () => {
    const { source, eventId, token } = await leased();
    expect((await release({ source, eventId, claimToken: token })).status).toBe(200);
    expect((await release({ source, eventId, claimToken: token })).status).toBe(404);
  });
});

describe("GET /api/v1/claims/{source}/{eventId}", () => {
  it("alive: secondsLeft counts down from the TTL by the database clock", async () => {
    const ttl = 7200;
    const source = await makeSource(ttl);
    const eventId = uniq("evt");
    await claim({ source, eventId, eventType: "charge" });
    await claim({ source, eventId, eventType: "charge" });
    const res = await getState(stateRoute, source, eventId, key);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: "alive", source, eventId, eventType: "charge", status: "done", duplicateCount: 1 });
    expect(res.body.secondsLeft).toBeGreaterThan(ttl - 10);
    expect(res.body.secondsLeft).toBeLessThanOrEqual(ttl);
    expect(res.body.lastDuplicateAt).toEqual(expect.any(String));
    expect(res.body.leaseExpiresAt).toBeNull();

    // Moving expiry on the database moves secondsLeft accordingly.
    await sql("UPDATE dedup_keys SET expires_at = now() + interval '100 seconds' WHERE source = $1 AND event_id = $2", [source, eventId]);
    const later = await getState(stateRoute, source, eventId, key);
    expect(later.body.secondsLeft).toBeGreaterThanOrEqual(98);
    expect(later.body.secondsLeft).toBeLessThanOrEqual(100);
  });

  it("alive and in flight: shows the lease", async () => {
    const { source, eventId } = await leased();
    const res = await getState(stateRoute, source, eventId, key);
    expect(res.body).toMatchObject({ state: "alive", status: "processing", leaseExpiresAt: expect.any(String) });
  });

  it("expired: the row is still there but its expiry passed", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    await claim({ source, eventId, eventType: "charge" });
    await expireKey(source, eventId);
    const res = await getState(stateRoute, source, eventId, key);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ state: "expired", secondsLeft: 0, eventType: "charge" });
  });

  it("unknown: never claimed (or released)", async () => {
    const source = await makeSource();
    const res = await getState(stateRoute, source, uniq("never"), key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ state: "unknown", source, eventId: expect.any(String) });
  });

  it("a claims:read key may read state; invalid params → 422", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    await claim({ source, eventId, eventType: "charge" });
    const res = await getState(stateRoute, source, eventId, readKey);
    expect(res.status).toBe(200);
    expect(res.body.state).toBe("alive");
    const bad = await getState(stateRoute, "Bad Source", eventId, readKey);
    expect(bad.status).toBe(422);
    expect(isErrorBody(bad.body)).toBe(true);
    expect(bad.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(["source"]);
  });
});
