/**
 * Every route under app/api (and GET /metrics, /healthz and /readyz, outside /api for Prometheus and probes), found on disk
 * (not listed by hand), must declare who may call it, and the
 * real server must enforce exactly that: anonymous → 401, a principal without the capability → 403, one
 * with it → neither. The principals are people (viewer, operator, admin sessions, with the Origin a
 * browser sends) and API keys (one per scope). What each principal holds is written out below as the
 * specification, independently of lib/auth/roles.ts; a route whose declared capabilities no principal
 * holds, or every principal holds, fails too.
 *
 * Public routes must be in PUBLIC_ROUTES: making a route public is a conscious, reviewed choice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCOPES, type Scope } from "@/lib/auth/schema";
import type { Role } from "@/lib/auth/roles";
import type { RouteAccess } from "@/lib/http/route";
import { uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { stopServer, type Server } from "@/test/setup/server";
import { concretePath, discoverExports, HTTP_METHODS, routeLabel, type RouteExport } from "@/test/setup/routes";
import { call, signedInUser, startTestServer, type CallOptions } from "@/test/setup/auth";

/** Routes anyone may call, as `METHOD /path`, each with why. */
const PUBLIC_ROUTES: Record<string, string> = {
  "GET /api/v1/session": "the sign-in page asks who is signed in",
  "POST /api/v1/session": "signing in",
  "GET /api/auth/[...all]": "the OIDC provider's redirect back",
  "POST /api/auth/[...all]": "starting single sign-on",
  "POST /api/v1/maintenance/prune/external": "external schedulers authenticate with KEYWARD_MAINTENANCE_SECRET, not a session or key",
  "GET /api/v1/openapi.json": "the API's description holds no data; code generators and API explorers read it before they have a key",
  "GET /healthz": "the liveness probe: load balancers and orchestrators call it without credentials",
  "GET /readyz": "the readiness probe: load balancers and orchestrators call it without credentials",
  ...Object.fromEntries(
    HTTP_METHODS.map((m) => [`${m} /api/[[...path]]`, "an unknown API path is a 404 in the error shape for everyone"]),
  ),
};

/** Calls that end the caller's own session: they get fresh sessions so the others keep theirs. */
const ENDS_SESSION = new Set(["DELETE /api/v1/session"]);

/** What each principal may do, by the product's rules (roles, scopes and the scopes they imply). */
const ROLE_GRANTS: Record<Role, string[]> = {
  viewer: ["read", "claims:read", "metrics"],
  operator: ["read", "operator", "claims:read", "metrics"],
  admin: ["read", "operator", "admin", "claims:read", "metrics"],
};
const SCOPE_GRANTS: Record<Scope, string[]> = {
  "claims:write": ["claims:write", "claims:read"],
  "claims:read": ["claims:read"],
  "deadletters:write": ["deadletters:write"],
  read: ["read", "claims:read", "metrics"],
  operator: ["operator", "read", "claims:read", "metrics"],
  metrics: ["metrics"],
};

const label = routeLabel;

function isAccess(a: unknown): a is RouteAccess {
  if (typeof a !== "object" || a === null) return false;
  if ("allow" in a) return Array.isArray(a.allow) && a.allow.length > 0 && a.allow.every((c) => typeof c === "string");
  if ("public" in a) return typeof a.public === "string" && a.public.trim().length > 0;
  return false;
}

let exportsFound: RouteExport[];

beforeAll(async () => {
  exportsFound = [...(await discoverExports()), ...(await discoverExports("app/metrics")), ...(await discoverExports("app/healthz")), ...(await discoverExports("app/readyz"))];
});

describe("every route under app/api declares who may call it", () => {
  it("finds the route files on disk", () => {
    const files = new Set(exportsFound.map((r) => r.file));
    expect(files.size).toBeGreaterThanOrEqual(10);
    expect(exportsFound.map(label)).toContain("POST /api/v1/claims");
    expect(exportsFound.map(label)).toContain("PATCH /api/v1/users/[username]");
    expect(exportsFound.map(label)).toContain("GET /metrics");
    for (const audit of ["GET /api/v1/audit", "GET /api/v1/audit/export", "GET /api/v1/events/[source]/[eventId]"]) {
      expect(exportsFound.map(label)).toContain(audit);
    }
    // Safe replay (issue 6): intake, listing, preflight, replays and their controls, source signing secret.
    for (const r of [
      "POST /api/v1/dead-letters",
      "GET /api/v1/dead-letters",
      "POST /api/v1/dead-letters/batch",
      "GET /api/v1/dead-letters/[id]",
      "POST /api/v1/replays/preflight",
      "GET /api/v1/replays/preflight/[id]",
      "POST /api/v1/replays/preflight/[id]/extend",
      "POST /api/v1/replays",
      "GET /api/v1/replays",
      "GET /api/v1/replays/[id]",
      "POST /api/v1/replays/[id]/pause",
      "POST /api/v1/replays/[id]/resume",
      "POST /api/v1/replays/[id]/cancel",
      "POST /api/v1/sources/[name]/signing-secret",
      // RabbitMQ inlets (issue 16 §1).
      "GET /api/v1/sources/[name]/inlets",
      "POST /api/v1/sources/[name]/inlets",
      "DELETE /api/v1/inlets/[id]",
      // Retention tuning from evidence (issue 14): the advisor, late duplicates, the edit preview.
      "GET /api/v1/sources/[name]/advice",
      "GET /api/v1/sources/[name]/late-duplicates",
      "POST /api/v1/sources/[name]/preview",
      // Replay operations (issue 13 §8-12): retry failed, per-attempt evidence, discard and resolve.
      "POST /api/v1/replays/[id]/retry-failed",
      "GET /api/v1/dead-letters/[id]/attempts",
      "POST /api/v1/dead-letters/discard",
      "POST /api/v1/dead-letters/resolve",
      // The API description (issue 16 §4).
      "GET /api/v1/openapi.json",
    ]) {
      expect(exportsFound.map(label)).toContain(r);
    }
  });

  it("each exported handler carries .access ({ allow: [...] } or { public: reason }) from route()", () => {
    const missing = exportsFound.filter((r) => !isAccess(r.access)).map((r) => `${label(r)} (${r.file})`);
    expect(missing, "handlers not wrapped by route(handler, access)").toEqual([]);
  });

  it("only HTTP methods the matrix knows are exported", () => {
    expect(exportsFound.filter((r) => !(HTTP_METHODS as readonly string[]).includes(r.method)).map(label)).toEqual([]);
  });

  it("public routes are exactly the allow-listed ones", () => {
    const declaredPublic = exportsFound.filter((r) => isAccess(r.access) && "public" in r.access).map(label).sort();
    expect(declaredPublic).toEqual(Object.keys(PUBLIC_ROUTES).sort());
  });

  it("every required capability is one a principal can hold, and the spec above covers every scope", () => {
    expect(Object.keys(SCOPE_GRANTS).sort()).toEqual([...SCOPES].sort());
    const known = new Set([...Object.values(ROLE_GRANTS).flat(), ...Object.values(SCOPE_GRANTS).flat()]);
    for (const r of exportsFound) {
      if (isAccess(r.access) && "allow" in r.access) {
        for (const c of r.access.allow) expect(known.has(c), `${label(r)} requires unknown capability ${c}`).toBe(true);
      }
    }
  });
});

describe("the real server enforces each route's declared access", () => {
  const spawned: Server[] = [];
  let baseUrl: string;
  type Principal = { name: string; grants: string[]; auth: CallOptions; role?: Role };
  let principals: Principal[];

  beforeAll(async () => {
    ({ baseUrl } = await startTestServer(spawned));
    // One at a time: on a loaded 2-core machine, a burst of transactions can wait past Prisma's 2 s maxWait.
    const cookies: (readonly [Role, string])[] = [];
    for (const role of ["viewer", "operator", "admin"] as const) cookies.push([role, (await signedInUser(baseUrl, role)).cookie]);
    const keys: (readonly [Scope, string])[] = [];
    for (const s of SCOPES) keys.push([s, (await makeApiKey([s])).key]);
    principals = [
      ...cookies.map(([role, cookie]) => ({
        name: `${role} session`,
        grants: ROLE_GRANTS[role],
        auth: { cookie, origin: baseUrl },
        role,
      })),
      ...keys.map(([scope, key]) => ({ name: `API key with scope ${scope}`, grants: SCOPE_GRANTS[scope], auth: { key } })),
    ];
  }, 120_000);

  afterAll(async () => {
    for (const s of spawned) await stopServer(s);
  });

  function request(r: RouteExport, auth: CallOptions) {
    return call(baseUrl, r.method, concretePath(r.urlPattern), { ...auth, ...(r.method === "GET" ? {} : { body: {} }) });
  }

  it("anonymous → 401, a principal without the capability → 403, one with it → neither (sessions and API keys)", async () => {
    const guarded = exportsFound.filter((r) => isAccess(r.access) && "allow" in r.access);
    expect(guarded.length).toBeGreaterThan(10);
    const failures: string[] = [];
    const check = (ok: boolean, what: string) => void (ok || failures.push(what));

    for (const r of guarded) {
      const allow = (r.access as { allow: string[] }).allow;
      const anon = await request(r, {});
      check(anon.status === 401 && anon.body?.error?.code === "unauthorized", `${label(r)} anonymous → ${anon.status} ${anon.text}`);
      // A cookie that names no session is no one either.
      const stale = await request(r, { cookie: `keyward.session_token=${uniq("stale")}`, origin: baseUrl });
      check(stale.status === 401, `${label(r)} unknown session cookie → ${stale.status} ${stale.text}`);

      let allowedSeen = 0;
      let deniedSeen = 0;
      for (const p of principals) {
        const mayCall = allow.some((c) => p.grants.includes(c));
        const fresh = ENDS_SESSION.has(label(r)) && p.role;
        const res = await request(r, fresh ? { cookie: (await signedInUser(baseUrl, p.role!)).cookie, origin: baseUrl } : p.auth);
        if (mayCall) {
          allowedSeen++;
          check(![401, 403].includes(res.status) && res.status < 500, `${label(r)} ${p.name} (allowed) → ${res.status} ${res.text}`);
        } else {
          deniedSeen++;
          check(res.status === 403 && res.body?.error?.code === "forbidden", `${label(r)} ${p.name} (not allowed) → ${res.status} ${res.text}`);
        }
      }
      check(allowedSeen > 0, `${label(r)}: no principal may call it (allow: ${allow.join(", ")})`);
      check(deniedSeen > 0, `${label(r)}: every principal may call it (allow: ${allow.join(", ")}); should it be public?`);
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it("public routes answer an anonymous caller with neither 401 nor 403", async () => {
    const open = exportsFound.filter((r) => isAccess(r.access) && "public" in r.access);
    expect(open.length).toBe(Object.keys(PUBLIC_ROUTES).length);
    for (const r of open) {
      const res = await request(r, { origin: baseUrl });
      expect([401, 403], `${label(r)} → ${res.status} ${res.text}`).not.toContain(res.status);
      expect(res.status, `${label(r)} → ${res.text}`).toBeLessThan(500);
    }
  });
});
