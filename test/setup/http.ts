/**
 * Helpers for calling the route handlers in-process exactly as Next would (a Web Request in, a Response
 * out), for creating API keys, and for reading a key's row and audit history with raw SQL.
 */
import { createApiKey } from "@/lib/auth/api-keys";
import { cliPrincipal } from "@/lib/auth/principal";
import type { Scope } from "@/lib/auth/schema";
import { sql, uniq } from "./db";
import type { Json } from "./json";

/** Creates an API key with these scopes; returns the key in clear and its name. */
export async function makeApiKey(scopes: Scope[] = ["claims:write"]): Promise<{ key: string; name: string; id: string }> {
  const k = await createApiKey({ name: uniq("key"), scopes }, cliPrincipal());
  return { key: k.key, name: k.name, id: k.id };
}

type Handler = (req: Request, ctx?: { params: Promise<Record<string, string>> }) => Promise<Response>;

export type Called<B = Json> = { status: number; body: B; headers: Headers };

export type PostOptions = {
  key?: string | null;
  contentType?: string | null;
  headers?: Record<string, string>;
  /** Sent as is instead of JSON.stringify(body). */
  raw?: BodyInit;
  /** The request's path and query (default /api/v1/claims: the handlers read no path but the query). */
  path?: string;
};

/** POSTs `body` as JSON (with a Bearer key when given) to an in-process route handler. */
export async function post<B = Json>(handler: Handler, body: unknown, o: PostOptions = {}): Promise<Called<B>> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.contentType !== null) headers["content-type"] = o.contentType ?? "application/json";
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  const req = new Request(`http://localhost${o.path ?? "/api/v1/claims"}`, {
    method: "POST",
    headers,
    body: o.raw ?? JSON.stringify(body),
    ...(o.raw instanceof ReadableStream ? { duplex: "half" } : {}),
  } as RequestInit);
  return toCalled<B>(await handler(req));
}

/** GETs a key's state from the [source]/[eventId] route handler. */
export async function getState<B = Json>(handler: Handler, source: string, eventId: string, key?: string): Promise<Called<B>> {
  const req = new Request(`http://localhost/api/v1/claims/${encodeURIComponent(source)}/${encodeURIComponent(eventId)}`, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
  });
  return toCalled<B>(await handler(req, { params: Promise.resolve({ source, eventId }) }));
}

async function toCalled<B>(res: Response): Promise<Called<B>> {
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as B, headers: res.headers };
}

/** Asserts nothing; returns whether `body` has the one error shape { error: { code, message, details? } }. */
export function isErrorBody(body: unknown): boolean {
  if (typeof body !== "object" || body === null) return false;
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== "error") return false;
  const e = (body as { error: Record<string, unknown> }).error;
  const allowed = new Set(["code", "message", "details"]);
  return (
    typeof e === "object" &&
    e !== null &&
    typeof e.code === "string" &&
    typeof e.message === "string" &&
    e.message.length > 0 &&
    Object.keys(e).every((k) => allowed.has(k))
  );
}

export type KeyRow = {
  status: string;
  claim_token: string;
  claim_kind: string;
  payload_hash: string | null;
  event_type: string;
  duplicate_count: number;
  lease_expires_at: Date | null;
  last_duplicate_at: Date | null;
  received_at: Date;
  expires_at: Date;
};

export async function keyRow(source: string, eventId: string): Promise<KeyRow | undefined> {
  const [row] = await sql<KeyRow>("SELECT * FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, eventId]);
  return row;
}

export type AuditRow = { kind: string; actor: string | null; event_type: string | null; at: Date; detail: Json };

/** The key's audit rows, oldest first. */
export async function auditRows(source: string, eventId?: string): Promise<AuditRow[]> {
  return sql<AuditRow>(
    `SELECT kind, actor, event_type, at, detail FROM audit_events
     WHERE source = $1 AND ($2::text IS NULL OR event_id = $2) ORDER BY at, id`,
    [source, eventId ?? null],
  );
}

/** Makes a key look expired (but not pruned) by the database clock. */
export async function expireKey(source: string, eventId: string): Promise<void> {
  await sql("UPDATE dedup_keys SET expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, eventId]);
}

/** Makes a key's lease look lapsed by the database clock. */
export async function lapseLease(source: string, eventId: string): Promise<void> {
  await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [
    source,
    eventId,
  ]);
}

export const HASH_A = "a".repeat(64);
export const HASH_B = "b".repeat(64);
