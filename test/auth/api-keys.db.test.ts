/**
 * API keys: creation (shown once, only a hash stored), verification, revocation taking effect at once,
 * and the route wrapper's 401 (who are you?) versus 403 (you may not) on the claim routes.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { POST as claimRoute } from "@/app/api/v1/claims/route";
import { POST as batchRoute } from "@/app/api/v1/claims/batch/route";
import { POST as completeRoute } from "@/app/api/v1/claims/complete/route";
import { POST as releaseRoute } from "@/app/api/v1/claims/release/route";
import { GET as stateRoute } from "@/app/api/v1/claims/[source]/[eventId]/route";
import { createApiKey, listApiKeys, revokeApiKey, verifyApiKey } from "@/lib/auth/api-keys";
import { createApiKeyRequest, hasScope } from "@/lib/auth/schema";
import { KeywardError } from "@/lib/errors";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { getState, isErrorBody, makeApiKey, post, type Called } from "@/test/setup/http";

import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";

const ACTOR = cliPrincipal();
function expectError(res: Called, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(isErrorBody(res.body)).toBe(true);
  expect(res.body.error.code).toBe(code);
}

const claimBody = async () => ({ source: await makeSource(), eventId: uniq("evt"), eventType: "t" });

describe("createApiKey / verifyApiKey", () => {
  it("returns kw_<id>_<secret> once and stores only its SHA-256", async () => {
    const k = await createApiKey({ name: uniq("svc"), scopes: ["claims:write", "claims:write", "claims:read"] }, ACTOR);
    expect(k.key).toMatch(/^kw_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$/);
    expect(k.key.startsWith(`kw_${k.id}_`)).toBe(true);
    expect(k.scopes.sort()).toEqual(["claims:read", "claims:write"]); // de-duplicated
    const [row] = await sql<{ key_hash: string; row_text: string }>(
      "SELECT key_hash, t::text AS row_text FROM api_keys t WHERE id = $1",
      [k.id],
    );
    expect(row.key_hash).toBe(createHashHex(k.key));
    expect(row.row_text).not.toContain(k.key.slice(-43)); // the secret (base64url, may itself contain "_")
  });

  it("verifies the right key, rejects a forged secret, a malformed key and an unknown id", async () => {
    const k = await createApiKey({ name: uniq("svc"), scopes: ["claims:write"] }, ACTOR);
    expect(await verifyApiKey(k.key)).toEqual({ kind: "apikey", id: k.id, name: k.name, capabilities: ["claims:write"] });
    const secret = k.key.slice(-43);
    const forged = k.key.slice(0, -43) + (secret[0] === "A" ? "B" : "A") + secret.slice(1);
    expect(await verifyApiKey(forged)).toBeNull();
    expect(await verifyApiKey("kw_short")).toBeNull();
    expect(await verifyApiKey(`kw_zzzzzzzzzzzz_${secret}`)).toBeNull();
  });

  it("stamps last_used_at on use", async () => {
    const k = await createApiKey({ name: uniq("svc"), scopes: ["claims:write"] }, ACTOR);
    const [before] = await sql<{ last_used_at: Date | null }>("SELECT last_used_at FROM api_keys WHERE id = $1", [k.id]);
    expect(before.last_used_at).toBeNull();
    await verifyApiKey(k.key);
    const [after] = await sql<{ last_used_at: Date | null }>("SELECT last_used_at FROM api_keys WHERE id = $1", [k.id]);
    expect(after.last_used_at).toBeInstanceOf(Date);
  });

  it("a forged secret does not stamp last_used_at", async () => {
    const k = await createApiKey({ name: uniq("svc"), scopes: ["claims:write"] }, ACTOR);
    const secret = k.key.slice(-43);
    await verifyApiKey(k.key.slice(0, -43) + (secret[0] === "A" ? "B" : "A") + secret.slice(1));
    const [row] = await sql<{ last_used_at: Date | null }>("SELECT last_used_at FROM api_keys WHERE id = $1", [k.id]);
    expect(row.last_used_at).toBeNull();
  });

  it("a second key with the same name → 409 api_key_exists; bad names and scopes → 422", async () => {
    const name = uniq("svc");
    await createApiKey({ name, scopes: ["read"] }, ACTOR);
    await expect(createApiKey({ name, scopes: ["read"] }, ACTOR)).rejects.toMatchObject({ status: 409, code: "api_key_exists" });
    // Refused by the schema POST /api/v1/api-keys and the CLI parse with, before createApiKey.
    expect(() => parseInput(createApiKeyRequest, { name: "", scopes: ["read"] })).toThrow(KeywardError);
    expect(() => parseInput(createApiKeyRequest, { name: uniq("svc"), scopes: [] })).toThrow(expect.objectContaining({ status: 422 }));
    expect(() => parseInput(createApiKeyRequest, { name: uniq("svc"), scopes: ["admin"] })).toThrow(expect.objectContaining({ status: 422 }));
  });

  it("listApiKeys never exposes the key or its hash", async () => {
    const k = await createApiKey({ name: uniq("svc"), scopes: ["claims:read"] }, ACTOR);
    const listed = (await listApiKeys()).find((x) => x.id === k.id)!;
    expect(Object.keys(listed).sort()).toEqual(["createdAt", "id", "lastUsedAt", "name", "revokedAt", "scopes"]);
    expect(JSON.stringify(await listApiKeys())).not.toContain(k.key.slice(-43));
  });

  it("revoke by name or id; twice is harmless; unknown → 404", async () => {
    const a = await createApiKey({ name: uniq("svc"), scopes: ["read"] }, ACTOR);
    const first = await revokeApiKey(a.name, ACTOR);
    expect(first.revokedAt).toBeInstanceOf(Date);
    const again = await revokeApiKey(a.id, ACTOR);
    expect(again.revokedAt!.getTime()).toBe(first.revokedAt!.getTime());
    await expect(revokeApiKey(uniq("nobody"), ACTOR)).rejects.toMatchObject({ status: 404, code: "api_key_not_found" });
  });
});

describe("scopes", () => {
  it("claims:read is implied by claims:write, read and operator; claims:write by nothing else", () => {
    expect(hasScope(["claims:write"], "claims:read")).toBe(true);
    expect(hasScope(["read"], "claims:read")).toBe(true);
    expect(hasScope(["operator"], "claims:read")).toBe(true);
    expect(hasScope(["deadletters:write"], "claims:read")).toBe(false);
    expect(hasScope(["claims:read"], "claims:write")).toBe(false);
    expect(hasScope(["operator", "read"], "claims:write")).toBe(false);
    expect(hasScope([], "read")).toBe(false);
  });
});

describe("401 and 403 on the claim routes", () => {
  it("no Authorization header → 401", async () => {
    const res = await post(claimRoute, await claimBody(), {});
    expectError(res, 401, "unauthorized");
    expect(res.body.error.message).toMatch(/Bearer/);
  });

  it.each([
    ["Basic credentials", "Basic dXNlcjpwYXNz"],
    ["Bearer without a key", "Bearer "],
    ["garbage token", "Bearer not-a-key"],
    ["well-formed but unknown key", `Bearer kw_000000000000_${"A".repeat(43)}`],
  ])("%s → 401", async (_, authorization) => {
    const res = await post(claimRoute, await claimBody(), { headers: { authorization } });
    expectError(res, 401, "unauthorized");
  });

  it("authentication comes before reading the body (no 400/415 leak to strangers)", async () => {
    expectError(await post(claimRoute, undefined, { raw: "{nope" }), 401, "unauthorized");
    expectError(await post(claimRoute, {}, { contentType: "text/plain" }), 401, "unauthorized");
  });

  it("a revoked key gets 401 at once", async () => {
    const { key, id } = await makeApiKey(["claims:write"]);
    expect((await post(claimRoute, await claimBody(), { key })).status).toBe(201);
    await revokeApiKey(id, ACTOR);
    const res = await post(claimRoute, await claimBody(), { key });
    expectError(res, 401, "unauthorized");
    expect(res.body.error.message).toMatch(/revoked/);
  });

  it("a claims:read key POSTing a claim → 403 naming the missing scope, and nothing is claimed", async () => {
    const { key } = await makeApiKey(["claims:read"]);
    const body = await claimBody();
    const res = await post(claimRoute, body, { key });
    expectError(res, 403, "forbidden");
    expect(res.body.error.message).toMatch(/claims:write/);
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1", [body.source]);
    expect(n).toBe(0);
  });

  it("claims:read (and read, operator) keys are 403 on every write route; operator keys may release", async () => {
    for (const scopes of [["claims:read"], ["read"], ["operator"], ["deadletters:write"]] as const) {
      const { key } = await makeApiKey([...scopes]);
      for (const handler of [claimRoute, batchRoute, completeRoute]) {
        expectError(await post(handler, {}, { key }), 403, "forbidden");
      }
      const release = await post(releaseRoute, {}, { key });
      if (scopes[0] === "operator") expect(release.status).toBe(422); // allowed: only the empty body is refused
      else expectError(release, 403, "forbidden");
    }
  });

  it("GET state: allowed for claims:read, claims:write, read and operator; 403 for deadletters:write; 401 without a key", async () => {
    const source = await makeSource();
    for (const scopes of [["claims:read"], ["claims:write"], ["read"], ["operator"]] as const) {
      const { key } = await makeApiKey([...scopes]);
      const res = await getState(stateRoute, source, "e1", key);
      expect(res.status, scopes.join()).toBe(200);
      expect(res.body.state).toBe("unknown");
    }
    const { key: dl } = await makeApiKey(["deadletters:write"]);
    expectError(await getState(stateRoute, source, "e1", dl), 403, "forbidden");
    expectError(await getState(stateRoute, source, "e1"), 401, "unauthorized");
  });
});

function createHashHex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
