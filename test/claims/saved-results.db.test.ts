/**
 * Issue 25, the server side: POST /api/v1/claims/extend (a claim-token-checked lease extension), saved
 * results (complete may keep status, headers and body bytes with the key, opt-in per source and per call;
 * a duplicate claim answers them byte for byte; the audit history records the hash, not the bytes; a batch
 * says only that one is saved; a reclaim after expiry starts without one), and the payload-hash rule (a key
 * first claimed without a hash keeps the first one a later claim carries).
 */
import { createHash, randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { POST as claimRoute } from "@/app/api/v1/claims/route";
import { POST as batchRoute } from "@/app/api/v1/claims/batch/route";
import { POST as completeRoute } from "@/app/api/v1/claims/complete/route";
import { POST as extendRoute } from "@/app/api/v1/claims/extend/route";
import { POST as releaseRoute } from "@/app/api/v1/claims/release/route";
import { GET as stateRoute } from "@/app/api/v1/claims/[source]/[eventId]/route";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { auditRows, expireKey, getState, HASH_A, HASH_B, keyRow, lapseLease, makeApiKey, post } from "@/test/setup/http";

let key: string;
beforeAll(async () => {
  ({ key } = await makeApiKey(["claims:write"]));
});

const claim = (body: Record<string, unknown>) => post(claimRoute, body, { key });
const batch = (body: Record<string, unknown>) => post(batchRoute, body, { key });
const complete = (body: Record<string, unknown>) => post(completeRoute, body, { key });
const extend = (body: Record<string, unknown>) => post(extendRoute, body, { key });
const release = (body: Record<string, unknown>) => post(releaseRoute, body, { key });

async function keepingResults(ttl = 3600): Promise<string> {
  const source = await makeSource(ttl);
  await sql("UPDATE sources SET save_results = true WHERE name = $1", [source]);
  return source;
}

async function leased(source: string, leaseSeconds = 300) {
  const eventId = uniq("evt");
  const res = await claim({ source, eventId, eventType: "charge", leaseSeconds });
  expect(res.status).toBe(201);
  return { eventId, token: res.body.claimToken as string, leaseExpiresAt: res.body.leaseExpiresAt as string };
}

/** Bytes no text decoding survives (a lone 0xff, a NUL, an unpaired UTF-8 lead byte). */
const BINARY = Buffer.concat([Buffer.from([0xff, 0x00, 0xc3, 0x28, 0x0a]), randomBytes(300)]);

describe("saved results", () => {
  it("complete saves status, headers and bytes; a duplicate claim answers them exactly; the audit row has the hash only", async () => {
    const source = await keepingResults();
    const { eventId, token } = await leased(source);
    const result = { status: 202, headers: { "Content-Type": "application/octet-stream", "x-order": "o_1" }, bodyBase64: BINARY.toString("base64") };
    const done = await complete({ source, eventId, claimToken: token, result });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: "done", resultSaved: true });

    const dup = await claim({ source, eventId, eventType: "charge" });
    expect(dup.status).toBe(200);
    expect(dup.body.outcome).toBe("duplicate");
    expect(dup.body.result).toEqual({ status: 202, headers: { "content-type": "application/octet-stream", "x-order": "o_1" }, bodyBase64: result.bodyBase64 });
    expect(Buffer.from(dup.body.result.bodyBase64, "base64").equals(BINARY)).toBe(true);

    const completed = (await auditRows(source, eventId)).find((a) => a.kind === "completed")!;
    expect(completed.detail).toEqual({ result: { status: 202, bytes: BINARY.byteLength, sha256: createHash("sha256").update(BINARY).digest("hex") } });
    expect(JSON.stringify(completed.detail)).not.toContain(result.bodyBase64.slice(0, 16));

    expect((await getState(stateRoute, source, eventId, key)).body).toMatchObject({ status: "done", resultSaved: true });

    // A retried complete is a no-op that still says the result is saved (one completed row).
    const again = await complete({ source, eventId, claimToken: token, result: { status: 500, bodyBase64: "" } });
    expect(again.body).toMatchObject({ status: "done", resultSaved: true });
    expect((await keyRow(source, eventId)) as unknown).toMatchObject({ result_status: 202 });
    expect((await auditRows(source, eventId)).filter((a) => a.kind === "completed")).toHaveLength(1);
  });

  it("an empty body and no headers are a result too; complete without one saves none", async () => {
    const source = await keepingResults();
    const a = await leased(source);
    expect((await complete({ source, eventId: a.eventId, claimToken: a.token, result: { status: 204 } })).body.resultSaved).toBe(true);
    expect((await claim({ source, eventId: a.eventId, eventType: "charge" })).body.result).toEqual({ status: 204, headers: {}, bodyBase64: "" });

    const b = await leased(source);
    expect((await complete({ source, eventId: b.eventId, claimToken: b.token })).body.resultSaved).toBe(false);
    const dup = await claim({ source, eventId: b.eventId, eventType: "charge" });
    expect(dup.body.outcome).toBe("duplicate");
    expect(dup.body).not.toHaveProperty("result");
    expect((await auditRows(source, b.eventId)).find((r) => r.kind === "completed")!.detail).toBeNull();
  });

  it("a source that does not keep results refuses one (422 naming result), and nothing changes", async () => {
    const source = await makeSource();
    const { eventId, token } = await leased(source);
    const res = await complete({ source, eventId, claimToken: token, result: { status: 200, bodyBase64: "b2s=" } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: "results_not_kept", details: { field: "result" } });
    expect(res.body.error.message).toContain(`keyward source update ${source} --save-results on`);
    expect((await keyRow(source, eventId))!.status).toBe("processing");
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed"]);
    expect((await complete({ source, eventId, claimToken: token })).status).toBe(200);
  });

  it("refuses a body over KEYWARD_RESULT_MAX_BYTES (64 KiB) and malformed results, naming the field", async () => {
    const source = await keepingResults();
    const { eventId, token } = await leased(source);
    const tooLarge = await complete({ source, eventId, claimToken: token, result: { status: 200, bodyBase64: Buffer.alloc(65537).toString("base64") } });
    expect(tooLarge.status).toBe(422);
    expect(tooLarge.body.error).toMatchObject({ code: "result_too_large", details: { field: "result.bodyBase64", bytes: 65537, limit: 65536 } });
    const fits = Buffer.alloc(65536, 7);

    const bad = [
      [{ status: 700 }, "result.status"],
      [{ status: 200, bodyBase64: "not base64!" }, "result.bodyBase64"],
      [{ status: 200, headers: { "content-length": "3" } }, "result.headers.content-length"],
      [{ status: 200, headers: { "x-a": "line\nbreak" } }, "result.headers.x-a"],
      [{ status: 200, headers: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`x-${i}`, "v"])) }, "result.headers"],
      [{ status: 200, extra: 1 }, "result"],
    ] as const;
    for (const [result, field] of bad) {
      const res = await complete({ source, eventId, claimToken: token, result });
      expect(res.status, JSON.stringify(result)).toBe(422);
      expect(JSON.stringify(res.body.error.details), JSON.stringify(result)).toContain(field);
    }
    expect((await keyRow(source, eventId))!.status).toBe("processing");
    const ok = await complete({ source, eventId, claimToken: token, result: { status: 200, bodyBase64: fits.toString("base64") } });
    expect(ok.body.resultSaved).toBe(true);
  });

  it("a batch says a result is saved without carrying it, also for one distinct event", async () => {
    const source = await keepingResults();
    const { eventId, token } = await leased(source);
    await complete({ source, eventId, claimToken: token, result: { status: 200, bodyBase64: "aGk=" } });
    const fresh = uniq("evt");
    const two = await batch({ source, events: [{ eventId, eventType: "charge" }, { eventId: fresh, eventType: "charge" }] });
    expect(two.body.results[0]).toMatchObject({ outcome: "duplicate", resultSaved: true });
    expect(two.body.results[0]).not.toHaveProperty("result");
    expect(two.body.results[1]).not.toHaveProperty("resultSaved");
    const one = await batch({ source, events: [{ eventId, eventType: "charge" }, { eventId, eventType: "charge" }] });
    expect(one.body.results.map((r: Record<string, unknown>) => [r.outcome, r.resultSaved, "result" in r])).toEqual([
      ["duplicate", true, false],
      ["duplicate", true, false],
    ]);
  });

  it("a key claimed anew after expiry starts without the old result", async () => {
    const source = await keepingResults();
    const { eventId, token } = await leased(source);
    await complete({ source, eventId, claimToken: token, result: { status: 200, bodyBase64: "b2xk" } });
    await expireKey(source, eventId);
    const again = await claim({ source, eventId, eventType: "charge" });
    expect(again.body).toMatchObject({ outcome: "claimed", claimKind: "reclaimed_after_expiry" });
    const row = (await keyRow(source, eventId)) as unknown as { result_status: number | null; result_body: Buffer | null };
    expect([row.result_status, row.result_body]).toEqual([null, null]);
    const dup = await claim({ source, eventId, eventType: "charge" });
    expect(dup.body.outcome).toBe("duplicate");
    expect(dup.body).not.toHaveProperty("result");
  });
});

describe("POST /api/v1/claims/extend", () => {
  it("moves the lease to leaseSeconds from now (database clock), and the key's expiry with it when needed", async () => {
    const source = await makeSource(30);
    const { eventId, token, leaseExpiresAt } = await leased(source, 5);
    const res = await extend({ source, eventId, claimToken: token, leaseSeconds: 120 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ source, eventId, status: "processing" });
    const [{ lease, expires, now }] = await sql<{ lease: Date; expires: Date; now: Date }>(
      "SELECT lease_expires_at AS lease, expires_at AS expires, now() FROM dedup_keys WHERE source = $1 AND event_id = $2",
      [source, eventId],
    );
    expect(res.body.leaseExpiresAt).toBe(lease.toISOString());
    expect(lease.getTime()).toBeGreaterThan(Date.parse(leaseExpiresAt));
    expect(Math.abs(lease.getTime() - now.getTime() - 120_000)).toBeLessThan(5_000);
    expect(expires.getTime()).toBeGreaterThanOrEqual(lease.getTime()); // a key never expires while its lease runs
    expect(res.body.expiresAt).toBe(expires.toISOString());
    // Meanwhile another delivery is in flight, not a takeover; no audit row per heartbeat.
    expect((await claim({ source, eventId, eventType: "charge" })).body.outcome).toBe("in_flight");
    expect((await auditRows(source, eventId)).map((a) => a.kind)).toEqual(["claimed"]);
  });

  it("a lapsed lease nobody took over is still its holder's to extend", async () => {
    const source = await makeSource();
    const { eventId, token } = await leased(source, 5);
    await lapseLease(source, eventId);
    expect((await extend({ source, eventId, claimToken: token, leaseSeconds: 60 })).status).toBe(200);
    expect((await claim({ source, eventId, eventType: "charge" })).body.outcome).toBe("in_flight");
  });

  it("refuses a taken-over lease (409 claim_token_mismatch), a completed claim (409 claim_not_in_flight), a released key (404)", async () => {
    const source = await makeSource();
    const { eventId, token } = await leased(source, 5);
    await lapseLease(source, eventId);
    const takeover = await claim({ source, eventId, eventType: "charge", leaseSeconds: 60 });
    expect(takeover.body.claimKind).toBe("lease_takeover");
    const refused = await extend({ source, eventId, claimToken: token, leaseSeconds: 60 });
    expect([refused.status, refused.body.error.code]).toEqual([409, "claim_token_mismatch"]);
    const lease = (await keyRow(source, eventId))!.lease_expires_at;

    expect((await extend({ source, eventId, claimToken: takeover.body.claimToken, leaseSeconds: 90 })).status).toBe(200);
    expect((await keyRow(source, eventId))!.lease_expires_at!.getTime()).toBeGreaterThan(lease!.getTime());
    await complete({ source, eventId, claimToken: takeover.body.claimToken });
    const done = await extend({ source, eventId, claimToken: takeover.body.claimToken, leaseSeconds: 60 });
    expect([done.status, done.body.error.code]).toEqual([409, "claim_not_in_flight"]);
    expect((await keyRow(source, eventId))!.lease_expires_at).toBeNull();

    const other = await leased(source, 30);
    await release({ source, eventId: other.eventId, claimToken: other.token });
    const gone = await extend({ source, eventId: other.eventId, claimToken: other.token, leaseSeconds: 60 });
    expect([gone.status, gone.body.error.code]).toEqual([404, "key_not_found"]);
  });

  it("validates its input: leaseSeconds 1–86400, a UUID token", async () => {
    const source = await makeSource();
    const { eventId, token } = await leased(source);
    for (const [body, field] of [
      [{ source, eventId, claimToken: token, leaseSeconds: 0 }, "leaseSeconds"],
      [{ source, eventId, claimToken: token, leaseSeconds: 86401 }, "leaseSeconds"],
      [{ source, eventId, claimToken: token }, "leaseSeconds"],
      [{ source, eventId, claimToken: "nope", leaseSeconds: 5 }, "claimToken"],
    ] as const) {
      const res = await extend(body);
      expect(res.status).toBe(422);
      expect(JSON.stringify(res.body.error.details)).toContain(field);
    }
  });
});

describe("the payload-hash rule", () => {
  it("a key first claimed without a hash keeps the first one a later claim carries; another is a mismatch", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    expect((await claim({ source, eventId, eventType: "t" })).status).toBe(201);
    expect((await claim({ source, eventId, eventType: "t", payloadHash: HASH_A })).body.outcome).toBe("duplicate");
    expect((await keyRow(source, eventId))!.payload_hash).toBe(HASH_A);
    const other = await claim({ source, eventId, eventType: "t", payloadHash: HASH_B });
    expect([other.status, other.body.outcome]).toEqual([409, "payload_mismatch"]);
    expect((await claim({ source, eventId, eventType: "t", payloadHash: HASH_A })).body.outcome).toBe("duplicate");
    expect((await claim({ source, eventId, eventType: "t" })).body.outcome).toBe("duplicate");
    expect((await keyRow(source, eventId))!.duplicate_count).toBe(3); // the mismatch is not a duplicate
  });

  it("holds while the first claim is in flight, and inside one batch", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    await claim({ source, eventId, eventType: "t", leaseSeconds: 60 });
    expect((await claim({ source, eventId, eventType: "t", payloadHash: HASH_A })).body.outcome).toBe("in_flight");
    expect((await claim({ source, eventId, eventType: "t", payloadHash: HASH_B })).body.outcome).toBe("payload_mismatch");

    const fresh = uniq("evt");
    const res = await batch({
      source,
      events: [
        { eventId: fresh, eventType: "t" },
        { eventId: fresh, eventType: "t", payloadHash: HASH_A },
        { eventId: fresh, eventType: "t", payloadHash: HASH_B },
      ],
    });
    expect(res.body.results.map((r: { outcome: string }) => r.outcome)).toEqual(["claimed", "duplicate", "payload_mismatch"]);
    expect((await keyRow(source, fresh))!.payload_hash).toBe(HASH_A);
  });
});
