/**
 * API keys managed over HTTP by an admin on the real server: created (the key in the 201 answer only),
 * working at once, revoked with the very next request refused (nothing cached), never listed in clear or
 * as its hash, and both changes in the operator action log with the admin as actor.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { stopServer, type Server } from "@/test/setup/server";
import { call, signedInUser, startTestServer, type TestUser } from "@/test/setup/auth";

const spawned: Server[] = [];
let baseUrl: string;
let admin: TestUser & { cookie: string };

beforeAll(async () => {
  ({ baseUrl } = await startTestServer(spawned));
  admin = await signedInUser(baseUrl, "admin");
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

const asAdmin = (method: string, path: string, body?: unknown) =>
  call(baseUrl, method, path, { cookie: admin.cookie, origin: baseUrl, body });

describe("API keys over HTTP", () => {
  it("create → works at once → listed without the key or its hash → revoke → the very next request is 401; both actions logged", async () => {
    const name = uniq("svc");
    const created = await asAdmin("POST", "/api/v1/api-keys", { name, scopes: ["claims:write"] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name, scopes: ["claims:write"], revokedAt: null });
    const { key, id } = created.body as { key: string; id: string };
    expect(key).toMatch(new RegExp(`^kw_${id}_[A-Za-z0-9_-]{43}$`));
    const secret = key.slice(-43);
    const hash = createHash("sha256").update(key).digest("hex");

    // It works at once: a claim with it.
    const source = await makeSource();
    const claim = (eventId: string) => call(baseUrl, "POST", "/api/v1/claims", { key, body: { source, eventId, eventType: "t" } });
    expect((await claim(uniq("evt"))).status).toBe(201);
    // Through Next's router too: the overview knows the key (403: it lacks scope read), so not a 401.
    expect((await call(baseUrl, "GET", "/api/v1/overview", { key })).status).toBe(403);

    // The list shows it, without the key or its hash.
    const list = await asAdmin("GET", "/api/v1/api-keys");
    expect(list.status).toBe(200);
    const listed = (list.body.apiKeys as Record<string, unknown>[]).find((k) => k.id === id);
    expect(listed).toMatchObject({ name, scopes: ["claims:write"], revokedAt: null });
    expect(Object.keys(listed!).sort()).toEqual(["createdAt", "id", "lastUsedAt", "name", "revokedAt", "scopes"]);
    for (const s of [key, secret, hash]) expect(list.text).not.toContain(s);

    const revoked = await asAdmin("DELETE", `/api/v1/api-keys/${id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id, name });
    expect(revoked.body.revokedAt).not.toBeNull();
    expect(revoked.text).not.toContain(secret);

    // The very next request with it, on the fast path and through Next.
    const after = await claim(uniq("evt"));
    expect(after.status).toBe(401);
    expect(after.body.error.message).toMatch(/revoked/);
    expect((await call(baseUrl, "GET", "/api/v1/overview", { key })).status).toBe(401);
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1", [source]);
    expect(n).toBe(1);

    // The action log: both, by the admin, naming the key.
    const rows = await sql<{ actor: string; detail: { action: string; target: { id: string }; after?: unknown } }>(
      "SELECT actor, detail FROM audit_events WHERE kind = 'operator' AND detail->'target'->>'type' = 'api_key' AND detail->'target'->>'id' = $1 ORDER BY at, id",
      [id],
    );
    expect(rows.map((r) => [r.actor, r.detail.action])).toEqual([
      [`user:${admin.username}`, "api_key.create"],
      [`user:${admin.username}`, "api_key.revoke"],
    ]);
    expect(rows[0].detail.after).toEqual({ name, scopes: ["claims:write"] });
    expect(JSON.stringify(rows)).not.toContain(secret);
    // …and the actions route shows them to the admin.
    const actions = await asAdmin("GET", `/api/v1/actions?actor=${encodeURIComponent(`user:${admin.username}`)}&limit=50`);
    expect(actions.status).toBe(200);
    const mine = (actions.body.items as { action: string; target: { id: string } | null }[]).filter((a) => a.target?.id === id);
    expect(mine.map((a) => a.action)).toEqual(["api_key.revoke", "api_key.create"]);
  });

  it("a bad request is refused and creates nothing: a scope no key may hold, an unknown field, a duplicate name", async () => {
    const name = uniq("svc");
    for (const body of [
      { name, scopes: ["admin"] },
      { name, scopes: [] },
      { name, scopes: ["read"], expiresAt: "never" },
    ]) {
      const res = await asAdmin("POST", "/api/v1/api-keys", body);
      expect(res.status, JSON.stringify(body)).toBe(422);
    }
    expect(await sql("SELECT 1 FROM api_keys WHERE name = $1", [name])).toEqual([]);
    expect((await asAdmin("POST", "/api/v1/api-keys", { name, scopes: ["read"] })).status).toBe(201);
    const dup = await asAdmin("POST", "/api/v1/api-keys", { name, scopes: ["read"] });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe("api_key_exists");
    expect(dup.text).not.toMatch(/kw_[a-z0-9]{12}_/);
  });

  it("revoking an unknown key → 404; revoking twice is harmless and logged once", async () => {
    expect((await asAdmin("DELETE", `/api/v1/api-keys/${uniq("nokey")}`)).status).toBe(404);
    const created = await asAdmin("POST", "/api/v1/api-keys", { name: uniq("svc"), scopes: ["read"] });
    const id = created.body.id as string;
    const first = await asAdmin("DELETE", `/api/v1/api-keys/${id}`);
    const second = await asAdmin("DELETE", `/api/v1/api-keys/${id}`);
    expect(second.status).toBe(200);
    expect(second.body.revokedAt).toBe(first.body.revokedAt);
    const [{ n }] = await sql<{ n: number }>(
      "SELECT count(*) AS n FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'api_key.revoke' AND detail->'target'->>'id' = $1",
      [id],
    );
    expect(n).toBe(1);
  });
});

describe("an operator frees a stuck key", () => {
  it("operators may release a key without its token (logged as key.release); viewers may not", async () => {
    const source = await makeSource(86400, uniq("stuck"));
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, lease_expires_at, expires_at)
       VALUES ($1, 'evt-stuck', 't', 'processing', gen_random_uuid(), 'claimed', now() + interval '1 hour', now() + interval '1 day')`,
      [source],
    );
    const viewer = await signedInUser(baseUrl, "viewer");
    const refused = await call(baseUrl, "POST", "/api/v1/claims/release", {
      cookie: viewer.cookie,
      origin: baseUrl,
      body: { source, eventId: "evt-stuck" },
    });
    expect(refused.status).toBe(403);

    const operator = await signedInUser(baseUrl, "operator");
    const released = await call(baseUrl, "POST", "/api/v1/claims/release", {
      cookie: operator.cookie,
      origin: baseUrl,
      body: { source, eventId: "evt-stuck" },
    });
    expect(released.status).toBe(200);
    expect(released.body.status).toBe("released");
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1", [source]);
    expect(n).toBe(0);
    const [logged] = await sql<{ actor: string; target: string }>(
      `SELECT actor, detail->'target'->>'id' AS target FROM audit_events
       WHERE kind = 'operator' AND detail->>'action' = 'key.release' AND source = $1`,
      [source],
    );
    expect(logged).toEqual({ actor: `user:${operator.username}`, target: `${source}/evt-stuck` });
  });
});
