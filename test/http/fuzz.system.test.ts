/**
 * Hostile input against every route (issue 11 §3: zero 500s). Walks every handler the route matrix finds
 * on disk (test/setup/routes.ts) on a real `keyward start`, as an admin session and as an API key, with:
 * malformed percent-encoding, NUL and odd Unicode in path segments and query values, forged cursors and
 * impossible dates, huge / negative / fractional numbers, wrong types, empty and blank strings, arrays for
 * objects, oversize strings and bodies, deep nesting, bad JSON, wrong content types, duplicated and
 * unknown query parameters, unknown paths, trailing slashes and methods a route does not export.
 *
 * Every answer must be: no 5xx but 503; a 4xx in the one error shape; the API security headers; no
 * redirect; a status the operation declares in the API description (GET /api/v1/openapi.json), which is
 * what keeps each route's `errors` honest. A refused request must store nothing (row counts of the main tables compared around each
 * refused change; the file has its own database so no other test file moves them).
 *
 * Deterministic: the cases come from a seeded generator (FUZZ_SEED overrides the seed to explore;
 * a failure prints the seed). Bounded: a fixed number of cases per route and field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_HEADERS } from "@/lib/http/headers";
import { sql } from "@/test/setup/db";
import { isErrorBody, makeApiKey, HASH_A } from "@/test/setup/http";
import { makeUser, signedInUser, startTestServer } from "@/test/setup/auth";
import { stopServer, type Server } from "@/test/setup/server";
import { concretePath, discoverExports, dynamicSegments, HTTP_METHODS, openApiPathOf, routeLabel, type RouteExport } from "@/test/setup/routes";


const SEED = Number(process.env.FUZZ_SEED ?? 20261204);

/** mulberry32: a small seeded generator, so a failing case can be replayed exactly. */
function seeded(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(xs: readonly T[], n: number): T[] => {
    const pool = [...xs];
    const out: T[] = [];
    while (out.length < n && pool.length) out.push(pool.splice(Math.floor(next() * pool.length), 1)[0]);
    return out;
  };
  return { next, pick };
}

/** Path segment values, inserted as written (already percent-encoded where they need it). */
const HOSTILE_SEGMENTS = [
  "%ZZ", "%C0%AE", "%ED%A0%80", "%E0%A4%A", "%", "%00", "a%00b", "%20%20%20", "%09", "%E2%80%8B", "%EF%BF%BF",
  "%F0%9F%92%A9", "%E2%80%AE", "%C3%A9", "%2F", "%5C", "%25", "-1", "0", "99999999999999999999999", "1e309",
  "NaN", "null", "%5B%5D", "%7B%7D", "00000000-0000-0000-0000-000000000000", "x".repeat(3000), "%27%3B--",
];

const ISSUE_SEGMENTS = ["%ZZ", "%C0%AE", "%ED%A0%80", "%00", "%20%20%20"];

const DAY0 = "0000-01-01T00:00:00Z";
const b64 = (s: string) => Buffer.from(s).toString("base64url");
const UUID = "11111111-1111-4111-8111-111111111111";

/** Query values, written raw into the query string. */
const HOSTILE_QUERY_VALUES = [
  "2026-02-30T00:00:00Z_1", `${DAY0}_1`, DAY0, "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "9999-12-31T23:59:59Z",
  "%2B275760-09-13T00:00:00Z", "0001-01-01T00:00:00%2B01:00", "2026-12-01T00:00:00Z_99999999999999999999",
  "2026-12-01T00:00:00Z_9999999999999999999", "2026-12-01T00:00:00Z_-1",
  b64(JSON.stringify({ s: "failedAt", v: DAY0, i: UUID })), b64(JSON.stringify({ s: "keyExpiry", v: "99999999999999999999", i: UUID })),
  b64(JSON.stringify({ s: "failedAt", v: "2026-02-30T00:00:00Z", i: UUID })), b64(`${DAY0}_${UUID}`), b64(`2026-02-30T00:00:00Z_${UUID}`),
  b64("null"), b64("[]"), "%00", "a%00b", "%ZZ", "%ED%A0%80", "%F0%9F%92%A9", "%E2%80%8B", "", "%20", "-1", "0", "1.5", "1e309",
  "99999999999999999999999", "NaN", "Infinity", "0x10", "true", "[]", "%7B%7D", "x".repeat(4000), "%27%20OR%201=1--", "%5C",
];

const QUERY_NAMES = [
  "cursor", "before", "from", "to", "failedAt", "limit", "actor", "action", "errorContains", "source", "eventId",
  "eventIdPrefix", "eventType", "kind", "status", "sort", "range",
];

const deep = (n: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = [v];
  return v;
};

/** `[[[…1…]]]` as JSON text (JSON.stringify of it would overflow the stack). */
const deepText = (n: number) => "[".repeat(n) + "1" + "]".repeat(n);

/** JSON values put in place of one field of a valid body. */
const HOSTILE_VALUES: unknown[] = [
  null, true, false, 0, -1, 1.5, -1e308, 1e308, 2 ** 53 + 1, -(2 ** 63), "", " ", "   \t\n", "\u00a0\u3000", "\u0000",
  "a\u0000b", "\ud800", "x\udfff", "\ud83d", "😀", "\u202eevil", "e\u0301", "x".repeat(70_000), "2026-02-30T00:00:00Z", DAY0,
  "9999-12-31T23:59:59Z", "-1", "1e309", "http://127.0.0.1/\u0000", "https://127.0.0.1/\ud800", [], [1, "a", null], {},
  { $ne: 1 }, deep(40),
];

/** Whole bodies: bad JSON, wrong shapes. */
const RAW_BODIES: { name: string; body: string | Buffer; type?: string | null }[] = [
  { name: "truncated JSON", body: '{"a":' },
  { name: "empty body", body: "" },
  { name: "JSON null", body: "null" },
  { name: "JSON array", body: "[]" },
  { name: "JSON string", body: '"text"' },
  { name: "JSON number", body: "1e999" },
  { name: "BOM before JSON", body: "\ufeff{}" },
  { name: "duplicate keys", body: '{"source":"a","source":"b"}' },
  { name: "bytes that are not UTF-8", body: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]) },
  { name: "NUL escape in a key", body: '{"\\u0000":1}' },
  { name: "nested 5,000 deep", body: deepText(5000) },
  { name: "text/plain", body: "{}", type: "text/plain" },
  { name: "form", body: "a=1&b=2", type: "application/x-www-form-urlencoded" },
  { name: "multipart", body: "--x\r\n\r\n--x--", type: "multipart/form-data; boundary=x" },
  { name: "no content type", body: "{}", type: null },
  { name: "2 MiB body", body: JSON.stringify({ a: "x".repeat(2 * 1024 * 1024) }) },
];

/** Tables a refused request must not add to (metric_samples and claim_counts move on their own schedule). */
const TABLES = [
  "dedup_keys", "audit_events", "dead_letters", "sources", "api_keys", "auth_users", "auth_sessions", "auth_accounts",
  "replays", "replay_items", "replay_preflights", "replay_preflight_items", "replay_attempts", "prune_runs", "settings", "sign_in_throttle", "inlets",
];
/** A refused sign-in is recorded on purpose (the action log and the throttle). */
const RECORDS_REFUSALS: Record<string, string[]> = { "POST /api/v1/session": ["audit_events", "sign_in_throttle"] };

async function rowCounts(): Promise<Record<string, number>> {
  const [row] = await sql<Record<string, number>>(`SELECT ${TABLES.map((t) => `(SELECT count(*)::int FROM ${t}) AS ${t}`).join(", ")}`);
  return row;
}

type Auth = { name: string; headers: Record<string, string> };
type Answer = { status: number; headers: Headers; text: string; body: unknown };
type Case = { route: string; what: string; method: string; path: string; auth: Auth; body?: string | Buffer; type?: string | null; headers?: Record<string, string> };

const spawned: Server[] = [];
let baseUrl: string;
let routes: RouteExport[];
let principals: Auth[];
let fixtures: {
  source: string;
  spareSource: string;
  eventId: string;
  claimToken: string;
  deadLetterId: string;
  preflightId: string;
  user: string;
  spareKeyId: string;
};
let counter = 0;
const fresh = (p: string) => `fz-${p}-${SEED}-${++counter}`;

async function send(c: Case): Promise<Answer> {
  const headers: Record<string, string> = { ...c.auth.headers, ...c.headers };
  if (c.body !== undefined && c.type !== null) headers["content-type"] = c.type ?? "application/json";
  const payload = typeof c.body === "string" || c.body === undefined ? c.body : new Uint8Array(c.body);
  let res: Response;
  for (let attempt = 1; ; attempt++) {
    try {
      res = await fetch(baseUrl + c.path, { method: c.method, headers, body: payload, redirect: "manual", signal: AbortSignal.timeout(20_000) });
      break;
    } catch (err) {
      // A server may answer a request before reading its body (an oversize body's 413, a refusal before the
      // body is parsed) and close the connection (RFC 9110); the client, still sending, then sometimes sees the
      // close (EPIPE, ECONNRESET) before it reads the answer, more often on a loaded machine. That race is the
      // transport's: send again until the answer itself is read and checked like any other. A server that died
      // refuses the next connection, which is thrown.
      const code = (err as { cause?: { code?: string } }).cause?.code ?? "";
      if (payload === undefined || !["EPIPE", "ECONNRESET"].includes(code) || attempt >= 5) throw err;
    }
  }
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

/** A claim's 409 answers are claim outcomes (README, the claim API), not errors. */
const isClaimOutcome = (a: Answer) =>
  a.status === 409 && ["in_flight", "payload_mismatch"].includes((a.body as { outcome?: string } | undefined)?.outcome ?? "");

/** What is wrong with this answer, or null. */
function problemOf(a: Answer): string | null {
  if (a.status >= 500 && a.status !== 503) return `${a.status}`;
  if (a.status === 503 && !a.headers.get("retry-after")) return "503 without Retry-After";
  if (a.status >= 300 && a.status < 400) return `redirect ${a.status} to ${a.headers.get("location")}`;
  for (const [name, value] of API_HEADERS) {
    if (a.headers.get(name)?.toLowerCase() !== value.toLowerCase()) return `${a.status} without ${name}: ${value}`;
  }
  if (a.status >= 400) {
    if (!(a.headers.get("content-type") ?? "").includes("application/json")) return `${a.status} is not JSON`;
    if (!isErrorBody(a.body) && !isClaimOutcome(a)) return `${a.status} not in the error shape`;
  }
  return null;
}

/** The statuses each operation declares in the served API description, by route label (`GET /api/v1/sources/[name]`). */
async function declaredStatuses(): Promise<(label: string) => Set<string> | undefined> {
  const res = await fetch(`${baseUrl}/api/v1/openapi.json`);
  const doc = (await res.json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
  return (label) => {
    const [method, pattern] = label.split(" ");
    const op = doc.paths[openApiPathOf(pattern)]?.[method.toLowerCase()];
    return op && new Set(Object.keys(op.responses));
  };
}

/** Answers whose status the operation does not declare, one line per route and status. */
function undeclaredStatuses(cases: Case[], answers: Answer[], declared: (label: string) => Set<string> | undefined): string[] {
  const seen = new Map<string, string>();
  cases.forEach((c, i) => {
    const statuses = declared(c.route);
    const status = String(answers[i].status);
    if (statuses?.has(status)) return;
    const key = `${c.route} → ${status}`;
    if (!seen.has(key)) seen.set(key, `${key} is not declared in the API description (${statuses ? `e.g. ${c.what}` : "no such operation"}): add it to the route's errors`);
  });
  return [...seen.values()];
}

function describeCase(c: Case, a: Answer): string {
  return `${c.route} [${c.auth.name}] ${c.what}: ${c.method} ${c.path.slice(0, 160)} → ${problemOf(a)} ${a.text.slice(0, 160)}`;
}

/** Runs GETs (which change nothing) a few at a time, and collects what is wrong. */
async function runAll(cases: Case[], failures: string[], concurrency = 6): Promise<Answer[]> {
  const answers: Answer[] = new Array(cases.length);
  let i = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (i < cases.length) {
        const n = i++;
        const a = await send(cases[n]);
        answers[n] = a;
        if (problemOf(a)) failures.push(describeCase(cases[n], a));
      }
    }),
  );
  return answers;
}

/** Runs changes one at a time; a refused one (4xx) must leave every row count as it was. */
async function runChanges(cases: Case[], failures: string[]): Promise<Answer[]> {
  const answers: Answer[] = [];
  let before = await rowCounts();
  for (const c of cases) {
    const a = await send(c);
    answers.push(a);
    if (problemOf(a)) failures.push(describeCase(c, a));
    const after = await rowCounts();
    if (a.status >= 400) {
      const allowed = RECORDS_REFUSALS[c.route] ?? [];
      const moved = TABLES.filter((t) => !allowed.includes(t) && after[t] !== before[t]);
      if (moved.length) failures.push(`${c.route} [${c.auth.name}] ${c.what}: refused with ${a.status} but stored rows in ${moved.join(", ")}`);
    }
    before = after;
  }
  return answers;
}

function segmentValues(r: RouteExport): Record<string, string> {
  const id = r.urlPattern.startsWith("/api/v1/dead-letters/")
    ? fixtures.deadLetterId
    : r.urlPattern.startsWith("/api/v1/replays/preflight/")
      ? fixtures.preflightId
      : r.urlPattern.startsWith("/api/v1/api-keys/")
        ? fixtures.spareKeyId
        : UUID;
  const name = r.method === "GET" ? fixtures.source : fixtures.spareSource;
  return { "[source]": fixtures.source, "[name]": name, "[eventId]": fixtures.eventId, "[username]": fixtures.user, "[id]": id };
}

const LETTER_PAYLOAD = '"payload":{"a":1}';

/** A valid body for each route that takes one (fresh names where a name must be new). */
function validBody(label: string): Record<string, unknown> | undefined {
  const f = fixtures;
  const letter = () => ({
    source: f.source, eventId: fresh("dl"), eventType: "t", payload: { a: 1 }, error: "boom", attempts: 1,
    failedAt: "2026-12-01T00:00:00Z", queue: "q",
  });
  const bodies: Record<string, () => Record<string, unknown>> = {
    "POST /api/v1/claims": () => ({ source: f.source, eventId: fresh("evt"), eventType: "t", payloadHash: HASH_A, leaseSeconds: 60 }),
    "POST /api/v1/claims/batch": () => ({ source: f.source, events: [{ eventId: fresh("evt"), eventType: "t" }], leaseSeconds: 60 }),
    "POST /api/v1/claims/complete": () => ({ source: f.source, eventId: f.eventId, claimToken: f.claimToken }),
    "POST /api/v1/claims/release": () => ({ source: f.source, eventId: fresh("evt"), claimToken: UUID }),
    "POST /api/v1/claims/extend": () => ({ source: f.source, eventId: f.eventId, claimToken: f.claimToken, leaseSeconds: 60 }),
    "POST /api/v1/dead-letters": letter,
    "POST /api/v1/dead-letters/batch": () => ({ items: [letter()] }),
    "POST /api/v1/sources": () => ({
      name: fresh("src").toLowerCase(), retryWindowSeconds: 60, queueLagSeconds: 0, clockSkewSeconds: 0, replaySeconds: 0,
      deadLetterRetentionSeconds: 3600,
    }),
    "PATCH /api/v1/sources/[name]": () => ({ retryWindowSeconds: 120, replayDestination: "http://127.0.0.1:9/hook", deadLetterRetentionSeconds: 7200 }),
    "POST /api/v1/sources/[name]/inlets": () => ({
      amqpUrl: "amqp://guest:guest@127.0.0.1:5672/", queue: fresh("q"), eventIdFrom: "header:x-event-id", prefetch: 10, check: false,
    }),
    "POST /api/v1/api-keys": () => ({ name: fresh("key"), scopes: ["read"] }),
    "POST /api/v1/users": () => ({ username: fresh("u"), role: "viewer", password: "a-long-enough-password", name: "Fuzz" }),
    "PATCH /api/v1/users/[username]": () => ({ role: "viewer", disabled: false }),
    "POST /api/v1/users/[username]/password": () => ({ password: "another-long-password" }),
    "POST /api/v1/session": () => ({ username: f.user, password: "not-the-password" }),
    "POST /api/v1/replays/preflight": () => ({
      source: f.source, deadLetterIds: [f.deadLetterId], replayWindowSeconds: 3600,
    }),
    "POST /api/v1/replays": () => ({ preflightId: f.preflightId, include: ["never_processed"], force: { reason: "fuzzing the replay start" }, ratePerSecond: 1, concurrency: 1 }),
    // Valid, and changing nothing: an id nobody has; a filter nothing matches (so a mutation of one field
    // cannot settle the fixtures' letters either).
    "POST /api/v1/dead-letters/discard": () => ({ ids: [UUID], reason: "fuzzing the discard route" }),
    "POST /api/v1/dead-letters/resolve": () => ({
      filter: { source: f.source, status: "pending", failedSince: "2099-01-01T00:00:00Z", error: "no letter has this error" },
      expectedCount: 0,
      reason: "fuzzing",
    }),
    "POST /api/v1/maintenance/prune": () => ({ batchSize: 10, pauseMs: 0, budgetMs: 100 }),
    "POST /api/v1/maintenance/prune/external": () => ({ batchSize: 10 }),
  };
  return bodies[label]?.();
}

/** The body's fields as paths (`events.0.eventId`), nested objects and first array items included. */
function fieldPaths(v: unknown, prefix: string[] = []): string[][] {
  if (typeof v !== "object" || v === null) return [];
  const out: string[][] = [];
  const entries: [string, unknown][] = Array.isArray(v) ? (v.length ? [["0", v[0]]] : []) : Object.entries(v);
  for (const [k, child] of entries) {
    out.push([...prefix, k]);
    out.push(...fieldPaths(child, [...prefix, k]));
  }
  return out;
}

function withField(body: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const copy = structuredClone(body);
  let node = copy as Record<string, unknown>;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string, unknown>;
  if (value === undefined) delete node[path[path.length - 1]];
  else node[path[path.length - 1]] = value;
  return copy;
}

/**
 * Every case for one route and principal. A principal the route refuses (403 before anything is read)
 * gets the URL cases only: its bodies would all be the same 403.
 */
function casesFor(r: RouteExport, auth: Auth, rnd: ReturnType<typeof seeded>, forbidden: boolean): Case[] {
  const label = routeLabel(r);
  const headers: Record<string, string> = r.urlPattern === "/api/v1/replays" ? { "idempotency-key": fresh("idem") } : {};
  const base = { route: label, method: r.method, auth, headers };
  const path = concretePath(r.urlPattern, segmentValues(r));
  const cases: Case[] = [];
  const withBody = r.method !== "GET";
  const body = () => (withBody ? JSON.stringify(validBody(label) ?? {}) : undefined);

  // Path segments, one at a time.
  for (const seg of dynamicSegments(r.urlPattern)) {
    // The issue's classes on every route, then a seeded few of the rest.
    for (const hostile of [...ISSUE_SEGMENTS, ...rnd.pick(HOSTILE_SEGMENTS.filter((x) => !ISSUE_SEGMENTS.includes(x)), 3)]) {
      const p = r.urlPattern
        .split("/")
        .map((s) => (s === seg ? hostile : s.startsWith("[") ? concretePath(s, segmentValues(r)) : s))
        .join("/");
      cases.push({ ...base, what: `segment ${seg} = ${hostile.slice(0, 40)}`, path: p, body: body() });
    }
  }
  // Query strings: hostile values, duplicated and unknown parameters.
  for (const name of rnd.pick(QUERY_NAMES, forbidden ? 0 : r.method === "GET" ? QUERY_NAMES.length : 4)) {
    for (const v of rnd.pick(HOSTILE_QUERY_VALUES, r.method === "GET" ? 2 : 1)) {
      cases.push({ ...base, what: `query ${name}=${v.slice(0, 40)}`, path: `${path}?${name}=${v}`, body: body() });
    }
  }
  cases.push({ ...base, what: "duplicated query parameters", path: `${path}?limit=1&limit=100000&cursor=a&cursor=b&from=${DAY0}&from=x`, body: body() });
  cases.push({ ...base, what: "unknown query parameters", path: `${path}?zzz=1&__proto__=x&constructor=1&limit[]=1`, body: body() });
  cases.push({ ...base, what: "a 6 KiB query string", path: `${path}?actor=${"y".repeat(6000)}`, body: body() });
  if (forbidden) return cases;
  if (auth.name === "API key") {
    // Hostile credentials and headers (once per route).
    for (const authorization of [`Bearer ${"k".repeat(6000)}`, "Basic Zm9vOmJhcg==", "Bearer a b", "Bearer kw_%00", "bearer"]) {
      cases.push({ ...base, what: `authorization ${authorization.slice(0, 20)}`, path, body: body(), headers: { ...headers, authorization } });
    }
    cases.push({ ...base, what: "a 1000-character idempotency key", path, body: body(), headers: { "idempotency-key": "k".repeat(1000) } });
  }
  if (!withBody) return cases;
  cases.push({ ...base, what: "JSON declared as UTF-16", path, body: body(), type: "application/json; charset=utf-16" });

  // Whole bodies.
  for (const raw of RAW_BODIES) cases.push({ ...base, what: `body: ${raw.name}`, path, body: raw.body, type: raw.type });
  // One field at a time: hostile values, missing, and an unknown field beside valid ones.
  const valid = validBody(label);
  if (valid) {
    for (const field of fieldPaths(valid)) {
      for (const v of [undefined, ...rnd.pick(HOSTILE_VALUES, 3)]) {
        const mutated = withField(validBody(label)!, field, v);
        const shown = v === undefined ? "missing" : JSON.stringify(v)?.slice(0, 40);
        cases.push({ ...base, what: `field ${field.join(".")} = ${shown}`, path, body: JSON.stringify(mutated) });
      }
    }
    cases.push({ ...base, what: "an unknown field", path, body: JSON.stringify({ ...validBody(label), zzz: 1 }) });
    const text = JSON.stringify(validBody(label));
    if (text.includes(LETTER_PAYLOAD)) {
      // Issue 11: one payload nested 5,000 deep must be that item's own error, never the request's 500.
      cases.push({ ...base, what: "a payload nested 5,000 deep", path, body: text.replace(LETTER_PAYLOAD, `"payload":${deepText(5000)}`) });
    }
  } else {
    for (const v of rnd.pick(HOSTILE_VALUES, 6)) cases.push({ ...base, what: `body ${JSON.stringify(v)?.slice(0, 40)}`, path, body: JSON.stringify(v) });
  }
  return cases;
}

beforeAll(async () => {
  routes = (await discoverExports()).filter((r) => (HTTP_METHODS as readonly string[]).includes(r.method));
  ({ baseUrl } = await startTestServer(spawned));
  const admin = await signedInUser(baseUrl, "admin");
  const key = await makeApiKey(["claims:write", "deadletters:write", "operator"]);
  principals = [
    { name: "admin session", headers: { cookie: admin.cookie, origin: baseUrl } },
    { name: "API key", headers: { authorization: `Bearer ${key.key}` } },
  ];
  const asKey = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
    send({ route: "fixture", what: "", method, path, auth: principals[1], body: JSON.stringify(body), headers });
  const asAdmin = (method: string, path: string, body: unknown) =>
    send({ route: "fixture", what: "", method, path, auth: principals[0], body: JSON.stringify(body) });

  const source = fresh("src").toLowerCase();
  const spareSource = fresh("spare").toLowerCase();
  for (const name of [source, spareSource]) {
    const s = await asAdmin("POST", "/api/v1/sources", { name, retryWindowSeconds: 86400, queueLagSeconds: 0, clockSkewSeconds: 0, replaySeconds: 0 });
    if (s.status !== 201) throw new Error(`fixture source: ${s.status} ${s.text}`);
  }
  const eventId = fresh("evt");
  const claim = await asKey("POST", "/api/v1/claims", { source, eventId, eventType: "t", leaseSeconds: 3600 });
  if (claim.status !== 201) throw new Error(`fixture claim: ${claim.status} ${claim.text}`);
  const dl = await asKey("POST", "/api/v1/dead-letters", { source, eventId: fresh("dl"), eventType: "t", payload: { a: 1 }, error: "boom" });
  if (dl.status !== 201) throw new Error(`fixture dead letter: ${dl.status} ${dl.text}`);
  const deadLetterId = (dl.body as { id: string }).id;
  const pf = await asKey("POST", "/api/v1/replays/preflight", { source, deadLetterIds: [deadLetterId] });
  if (pf.status !== 201) throw new Error(`fixture preflight: ${pf.status} ${pf.text}`);
  const user = (await makeUser("viewer")).username;
  const spare = await makeApiKey(["read"]);
  fixtures = {
    source, spareSource, eventId, claimToken: (claim.body as { claimToken: string }).claimToken, deadLetterId,
    preflightId: (pf.body as { preflightId: string }).preflightId, user, spareKeyId: spare.id,
  };
}, 120_000);

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

describe("the issue's cases, answer by answer", () => {
  it("a NUL or lone-surrogate username at sign-in is refused like any unknown name, and the attempt is recorded", async () => {
    for (const [username, recorded] of [
      ["adm\u0000in", "adm\\u0000in"],
      ["\ud800fuzz", "\\ud800fuzz"],
    ]) {
      const a = await send({ route: "sign-in", what: "", method: "POST", path: "/api/v1/session", auth: { name: "anonymous", headers: { origin: baseUrl } }, body: JSON.stringify({ username, password: "whatever-it-is" }) });
      expect(problemOf(a), a.text).toBeNull();
      expect(a.status, a.text).toBe(401);
      const rows = await sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'sign_in'
           AND detail->>'outcome' = 'failed' AND detail->'target'->>'id' = $1`,
        [recorded],
      );
      expect(rows[0].n, `failed sign-in of ${JSON.stringify(username)} recorded as ${recorded}`).toBe(1);
    }
  });

  it("malformed percent-encoding in a path segment is a 400 in the error shape, on the fast path and through Next", async () => {
    const failures: string[] = [];
    for (const bad of ["%ZZ", "%C0%AE", "%ED%A0%80"]) {
      for (const path of [`/api/v1/claims/${fixtures.source}/${bad}`, `/api/v1/users/${bad}`, `/api/v1/events/${bad}/x`, `/api/v1/api-keys/${bad}`]) {
        const method = path.startsWith("/api/v1/users/") ? "PATCH" : path.startsWith("/api/v1/api-keys/") ? "DELETE" : "GET";
        const c: Case = { route: path, what: "", method, path, auth: principals[0], body: method === "GET" ? undefined : "{}" };
        const a = await send(c);
        if (problemOf(a) || a.status !== 400 || (a.body as { error: { code: string } }).error.code !== "malformed_path") failures.push(describeCase(c, a) + ` (${a.status})`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("console pages: a malformed path is a plain 400, other hostile paths never a 5xx; the page headers are on every answer", async () => {
    const failures: string[] = [];
    for (const path of [
      "/events/%ZZ/x", "/events/x/%ED%A0%80", "/%C0%AE", "/events/a/%00", "/events/%F0%9F%92%A9/%20", "/events/a/" + "x".repeat(3000),
      "/?range=%00", "/?range=1e309", "/audit?from=0000-01-01T00:00:00Z&cursor=2026-02-30T00:00:00Z_1", "/audit/", "/replay?x=%ZZ",
    ]) {
      const res = await fetch(baseUrl + path, { headers: { cookie: principals[0].headers.cookie }, redirect: "manual" });
      const malformed = /%ZZ|%ED%A0%80|%C0%AE/.test(path.split("?")[0]);
      const ok = malformed ? res.status === 400 : res.status < 500;
      if (!ok || res.headers.get("x-content-type-options") !== "nosniff") failures.push(`${path} → ${res.status} ${res.headers.get("x-content-type-options")}`);
      await res.body?.cancel();
    }
    expect(failures).toEqual([]);
  });

  it("NUL in a query value or path segment is a 422 naming it", async () => {
    const cases: [string, string, string][] = [
      ["GET", "/api/v1/audit?actor=a%00b", "actor"],
      ["GET", "/api/v1/actions?action=%00", "action"],
      ["GET", "/api/v1/dead-letters?errorContains=%00", "errorContains"],
      ["DELETE", "/api/v1/api-keys/%00", "id"],
      ["PATCH", "/api/v1/users/%00", "username"],
      ["GET", `/api/v1/claims/${fixtures.source}/a%00`, "eventId"],
    ];
    for (const [method, path, field] of cases) {
      const a = await send({ route: path, what: "", method, path, auth: principals[0], body: method === "GET" ? undefined : JSON.stringify({ role: "viewer" }) });
      expect(problemOf(a), a.text).toBeNull();
      expect(a.status, `${method} ${path}: ${a.text}`).toBe(422);
      expect((a.body as { error: { details: { fields: { field: string }[] } } }).error.details.fields.map((f) => f.field)).toContain(field);
    }
  });

  it("forged cursors and impossible dates are a 422 naming the parameter", async () => {
    const cases: [string, string][] = [
      ["/api/v1/audit?cursor=2026-02-30T00:00:00Z_1", "cursor"],
      ["/api/v1/audit?cursor=2026-12-01T00:00:00Z_9999999999999999999", "cursor"],
      [`/api/v1/audit?from=${DAY0}`, "from"],
      [`/api/v1/actions?cursor=${DAY0}_1`, "cursor"],
      [`/api/v1/actions?cursor=${b64(JSON.stringify({ at: DAY0, id: "1" }))}`, "cursor"],
      [`/api/v1/audit?cursor=${b64(JSON.stringify({ at: "2026-12-01T00:00:00.000000Z", id: "99999999999999999999" }))}`, "cursor"],
      [`/api/v1/metrics?from=${DAY0}`, "from"],
      [`/api/v1/dead-letters?from=${DAY0}`, "from"],
      [`/api/v1/dead-letters?cursor=${b64(JSON.stringify({ s: "failedAt", v: DAY0, i: UUID }))}`, "cursor"],
      [`/api/v1/dead-letters?sort=keyExpiry&cursor=${b64(JSON.stringify({ s: "keyExpiry", v: "99999999999999999999", i: UUID }))}`, "cursor"],
      [`/api/v1/replays?cursor=${b64(`${DAY0}_${UUID}`)}`, "cursor"],
      // Issue 22: a position whose id is not a number answered 500 (BigInt("abc") threw inside the schema).
      [`/api/v1/audit?cursor=${b64(JSON.stringify({ at: "2020-01-01T00:00:00Z", id: "abc" }))}`, "cursor"],
      [`/api/v1/actions?cursor=${b64(JSON.stringify({ at: "2020-01-01T00:00:00Z", id: "abc" }))}`, "cursor"],
    ];
    for (const [path, field] of cases) {
      const a = await send({ route: path, what: "", method: "GET", path, auth: principals[0] });
      expect(problemOf(a), a.text).toBeNull();
      expect(a.status, `${path}: ${a.text}`).toBe(422);
      expect(a.text, path).toContain(field);
    }
    const dl = await send({
      route: "dl", what: "", method: "POST", path: "/api/v1/dead-letters", auth: principals[1],
      body: JSON.stringify({ source: fixtures.source, eventId: fresh("dl"), eventType: "t", payload: {}, error: "x", failedAt: DAY0 }),
    });
    expect(dl.status, dl.text).toBe(422);
    expect(dl.text).toContain("failedAt");
  });

  it("cursors forged from every field type the codec accepts: each list answers 200 or a 422 naming cursor, never a 5xx", async () => {
    // Each list's position (lib/pagination.ts), as it writes one, and the query that goes with it.
    const lists: { path: string; position: Record<string, unknown> }[] = [
      { path: "/api/v1/audit", position: { at: "2026-12-01T00:00:00.000000Z", id: "1" } },
      { path: "/api/v1/actions", position: { at: "2026-12-01T00:00:00.000000Z", id: "1" } },
      { path: "/api/v1/dead-letters", position: { s: "failedAt", v: "2026-12-01T00:00:00.000Z", i: UUID } },
      { path: "/api/v1/dead-letters?sort=keyExpiry", position: { s: "keyExpiry", v: "-1", i: UUID } },
      { path: "/api/v1/replays", position: { at: "2026-12-01T00:00:00.000Z", id: UUID } },
      { path: `/api/v1/dead-letters/${fixtures.deadLetterId}/attempts`, position: { at: "2026-12-01T00:00:00.000Z", id: "1" } },
      { path: `/api/v1/sources/${fixtures.source}/late-duplicates`, position: { at: "2026-12-01T00:00:00.000000Z", eventId: "e" } },
    ];
    // Every JSON type in place of each field, with the strings a position's fields are parsed from.
    const FIELD_VALUES: unknown[] = [
      "abc", "", " 1", "1 ", "-1", "+1", "1.5", "1e3", "0x10", "99999999999999999999", "9223372036854775808", "\u0000", "\ud800",
      "١٢٣", "2026-02-30T00:00:00Z", DAY0, "9999-12-31T23:59:59.999999Z", UUID.toUpperCase(), "x".repeat(300),
      0, -1, 1.5, 1e308, 2 ** 63, true, false, null, [], ["1"], {}, { id: "1" },
    ];
    const rnd = seeded(SEED + 22);
    const failures: string[] = [];
    for (const { path, position } of lists) {
      const forged: unknown[] = [null, [], "1", 1, {}, { ...position, extra: "1" }];
      for (const field of Object.keys(position)) {
        // The issue's case (a non-numeric id) and every type, on every field; a seeded few more strings.
        for (const v of [...FIELD_VALUES.filter((x) => typeof x !== "string"), "abc", ...rnd.pick(FIELD_VALUES.filter((x) => typeof x === "string"), 2)]) {
          forged.push({ ...position, [field]: v });
        }
        const { [field]: _, ...without } = position;
        forged.push(without);
      }
      const cases: Case[] = forged.map((f) => ({
        route: path, what: `cursor ${JSON.stringify(f).slice(0, 80)}`, method: "GET", auth: principals[0],
        path: `${path}${path.includes("?") ? "&" : "?"}cursor=${b64(JSON.stringify(f))}`,
      }));
      const answers = await runAll(cases, failures);
      answers.forEach((a, i) => {
        if (a.status !== 200 && (a.status !== 422 || !a.text.includes("cursor"))) failures.push(`${describeCase(cases[i], a)}: answered ${a.status}`);
      });
    }
    expect(failures, `seed ${SEED}`).toEqual([]);
  }, 120_000);

  it("a body that is not UTF-8 is a 400, never an id with U+FFFD in it", async () => {
    const before = await rowCounts();
    const body = Buffer.concat([Buffer.from(`{"source":"${fixtures.source}","eventType":"t","eventId":"evt-`), Buffer.from([0xff, 0xc0]), Buffer.from('"}')]);
    for (const path of ["/api/v1/claims", "/api/v1/dead-letters"]) {
      const a = await send({ route: path, what: "", method: "POST", path, auth: principals[1], body });
      expect(problemOf(a), a.text).toBeNull();
      expect(a.status, a.text).toBe(400);
      expect(a.text).toContain("UTF-8");
    }
    expect(await rowCounts()).toEqual(before);
  });

  it("a replay destination URL holding a NUL or a lone surrogate is a 422 naming it", async () => {
    for (const replayDestination of ["http://127.0.0.1/a\u0000b", "https://127.0.0.1/\ud800"]) {
      const path = `/api/v1/sources/${fixtures.spareSource}`;
      const a = await send({ route: path, what: "", method: "PATCH", path, auth: principals[0], body: JSON.stringify({ replayDestination }) });
      expect(problemOf(a), a.text).toBeNull();
      expect(a.status, a.text).toBe(422);
      expect(a.text).toContain("replayDestination");
    }
  });

  it("a blank event id is a 422 naming eventId, and nothing is stored", async () => {
    const before = await rowCounts();
    for (const eventId of [" ", "   ", "\t", "\u00a0\u3000"]) {
      for (const [path, body] of [
        ["/api/v1/claims", { source: fixtures.source, eventId, eventType: "t" }],
        ["/api/v1/claims/batch", { source: fixtures.source, events: [{ eventId, eventType: "t" }] }],
      ] as const) {
        const a = await send({ route: path, what: "", method: "POST", path, auth: principals[1], body: JSON.stringify(body) });
        expect(a.status, `${JSON.stringify(eventId)} → ${a.text}`).toBe(422);
        expect(a.text).toContain("eventId");
      }
    }
    expect(await rowCounts()).toEqual(before);
  });

  it("unknown /api paths, trailing slashes and methods a route does not export answer JSON 404/405 with the headers", async () => {
    const failures: string[] = [];
    const check = async (method: string, path: string, status: number) => {
      const c: Case = { route: path, what: "", method, path, auth: principals[0], body: method === "GET" || method === "HEAD" ? undefined : "{}" };
      const a = await send(c);
      if (problemOf(a) || a.status !== status) failures.push(`${describeCase(c, a)} (wanted ${status}, got ${a.status})`);
    };
    for (const method of [...HTTP_METHODS]) {
      for (const path of ["/api", "/api/nope", "/api/v1", "/api/v1/nope", "/api/v2/claims", "/api/v1/claims/x", "/api/v1/users/a/b/c"]) await check(method, path, 404);
    }
    for (const r of routes.filter((x) => !x.urlPattern.includes("[[...") && !x.urlPattern.startsWith("/api/auth"))) {
      await check(r.method, concretePath(r.urlPattern, segmentValues(r)) + "/", 404);
    }
    const byPattern = new Map<string, Set<string>>();
    for (const r of routes) byPattern.set(r.urlPattern, (byPattern.get(r.urlPattern) ?? new Set()).add(r.method));
    for (const [pattern, methods] of byPattern) {
      if (pattern.includes("[[...") || pattern.startsWith("/api/auth")) continue;
      const r = routes.find((x) => x.urlPattern === pattern)!;
      for (const m of HTTP_METHODS.filter((x) => !methods.has(x))) await check(m, concretePath(pattern, segmentValues(r)), 405);
    }
    expect(failures).toEqual([]);
  }, 60_000);
});

describe(`every route, hostile input (seed ${SEED})`, () => {
  it("no 5xx but 503, the error shape on every 4xx, the security headers on every answer, nothing stored by a refusal", async () => {
    const rnd = seeded(SEED);
    const reads: Case[] = [];
    const changes: Case[] = [];
    for (const r of routes) {
      for (const auth of principals) {
        // Signing out would end the admin session the rest of the run uses.
        if (routeLabel(r) === "DELETE /api/v1/session" && auth.name === "admin session") continue;
        // Authorization comes before the URL's NUL check and the body: a 403 here changes nothing.
        const path = concretePath(r.urlPattern, segmentValues(r));
        const probe = await send({ route: "probe", what: "", method: r.method, path: `${path}?probe=%00`, auth, body: r.method === "GET" ? undefined : "{" });
        for (const c of casesFor(r, auth, rnd, probe.status === 403)) (c.method === "GET" ? reads : changes).push(c);
      }
    }
    const failures: string[] = [];
    const started = Date.now();
    const before = await rowCounts();
    const readAnswers = await runAll(reads, failures);
    const readsMs = Date.now() - started;
    const afterReads = await rowCounts();
    const movedByReads = TABLES.filter((t) => afterReads[t] !== before[t]);
    if (movedByReads.length) failures.push(`reads changed row counts of ${movedByReads.join(", ")}`);
    const changeAnswers = await runChanges(changes, failures);
    failures.push(...undeclaredStatuses([...reads, ...changes], [...readAnswers, ...changeAnswers], await declaredStatuses()));
    console.log(`[fuzz] seed ${SEED}: ${reads.length} reads + ${changes.length} changes over ${routes.length} handlers in ${Date.now() - started} ms (reads ${readsMs} ms)`);
    expect(reads.length + changes.length).toBeGreaterThan(1500);
    expect(failures.slice(0, 60), `${failures.length} failures (seed ${SEED})`).toEqual([]);
  }, 240_000);
});
