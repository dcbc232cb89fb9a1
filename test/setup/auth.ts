/**
 * Helpers for the access tests: console users made through the library (real hashing, real rows), a
 * real server for a test file, and HTTP calls against it as a person (session cookie, with the Origin a
 * browser sends) or as a machine (API key).
 */
import { createUser } from "@/lib/auth/users";
import { cliPrincipal } from "@/lib/auth/principal";
import type { Role } from "@/lib/auth/roles";
import { uniq } from "./db";
import { baseEnv, startKeyward, type Server } from "./server";
import type { Json } from "./json";

/** Long enough for the 12-character minimum, and easy to search for in logs and rows. */
export const testPassword = () => `pw-${uniq("secret")}-${uniq("x")}`;

export type TestUser = { username: string; password: string; role: Role };

/** Creates a local account with a known password (one scrypt hash, ~50–100 ms). */
export async function makeUser(role: Role, o: { username?: string; password?: string } = {}): Promise<TestUser> {
  const username = o.username ?? uniq(role).toLowerCase();
  const password = o.password ?? testPassword();
  await createUser({ username, role, password }, cliPrincipal());
  return { username, password, role };
}

export type TestServer = { server: Server; baseUrl: string };

/**
 * Starts `keyward start --no-build` on 127.0.0.1, on a port of the kernel's choosing, against the file's database (the build
 * is made by the global setup). `spawned` collects it so afterAll can stop it even if start-up failed.
 */
export async function startTestServer(spawned: Server[], extraEnv: Record<string, string> = {}): Promise<TestServer> {
  const server = await startKeyward(Object.assign(baseEnv(), extraEnv), spawned);
  return { server, baseUrl: server.baseUrl };
}

export type HttpResult<B = Json> = { status: number; body: B; text: string; headers: Headers };

export type CallOptions = {
  /** `name=value` cookie pairs as a browser would send them. */
  cookie?: string;
  /** An API key, sent as Authorization: Bearer. */
  key?: string;
  /** The Origin header; `undefined` sends none. */
  origin?: string;
  /** JSON body (sent with content-type: application/json). */
  body?: unknown;
  /** Client address, sent as X-Forwarded-For (only trusted with KEYWARD_TRUST_PROXY=true). */
  address?: string;
  headers?: Record<string, string>;
};

/** One HTTP request to the real server; the body is parsed as JSON when it is JSON. */
export async function call<B = Json>(baseUrl: string, method: string, path: string, o: CallOptions = {}): Promise<HttpResult<B>> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.cookie) headers.cookie = o.cookie;
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  if (o.origin !== undefined) headers.origin = o.origin;
  if (o.address) headers["x-forwarded-for"] = o.address;
  let body: string | undefined;
  if (o.body !== undefined) {
    headers["content-type"] ??= "application/json";
    body = JSON.stringify(o.body);
  }
  const res = await fetch(baseUrl + path, { method, headers, body, redirect: "manual" });
  const text = await res.text();
  let parsed: unknown = undefined;
  if ((res.headers.get("content-type") ?? "").includes("json") && text) parsed = JSON.parse(text);
  return { status: res.status, body: parsed as B, text, headers: res.headers };
}

/** The `name=value` pairs of a response's Set-Cookie headers, as the next request's Cookie header. */
export function cookiesOf(headers: Headers): string {
  return headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
}

export type SignedIn = HttpResult & { cookie: string; setCookie: string[] };

/** POST /api/v1/session from the console's own origin, as the sign-in page does. */
export async function signIn(baseUrl: string, username: string, password: string, address?: string): Promise<SignedIn> {
  const res = await call(baseUrl, "POST", "/api/v1/session", { origin: baseUrl, body: { username, password }, address });
  return { ...res, cookie: cookiesOf(res.headers), setCookie: res.headers.getSetCookie() };
}

/** A new user of this role, signed in; throws unless sign-in succeeded. */
export async function signedInUser(baseUrl: string, role: Role, address?: string): Promise<TestUser & { cookie: string }> {
  const user = await makeUser(role);
  const res = await signIn(baseUrl, user.username, user.password, address);
  if (res.status !== 200 || !res.cookie) throw new Error(`sign-in of ${user.username} failed: ${res.status} ${res.text}`);
  return { ...user, cookie: res.cookie };
}
