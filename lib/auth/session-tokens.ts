/**
 * Session tokens are stored hashed. The cookie carries `<token>.<HMAC(secret, token)>`; `auth_sessions`
 * keeps only SHA-256(token), so whoever reads the database (a backup, a replica, an injection) — even
 * together with the signing secret kept in `settings` — cannot rebuild a working cookie.
 *
 * Better Auth 1.7.25 stores the token as is and has no option to hash it (its `storeIdentifier: "hashed"`
 * covers verification rows only; hooks cannot touch the lookups). So this wraps its database adapter:
 * for the session model, a token going in (a create, an update, a `where` on `token`) is replaced by its
 * hash, and a row coming back carries the token the caller looked it up by (or created it with), so the
 * cookie Better Auth signs is still the real token. A row found by something else (all sessions of a
 * user) comes back with the hash, which works as no cookie: it fails closed.
 */
import "server-only";
import { createHash } from "node:crypto";
import type { DBAdapter, DBTransactionAdapter, Where } from "better-auth";

/** What `auth_sessions.token` keeps of a session token (migration 20261204040000 hashed old rows alike). */
export function hashSessionToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

const SESSION_MODELS = new Set(["session", "auth_sessions"]);
const TOKEN = "token";

type Row = Record<string, unknown> | null;

/** The `where` with token values hashed, and a map from each hash back to the token it came from. */
function hashWhere(where: Where[] | undefined, known: Map<string, string>): Where[] | undefined {
  return where?.map((w) => {
    if (w.field !== TOKEN) return w;
    const op = w.operator ?? "eq";
    const hashOne = (v: unknown) => {
      if (typeof v !== "string") return v;
      const h = hashSessionToken(v);
      known.set(h, v);
      return h;
    };
    if (op === "eq" || op === "ne") return { ...w, value: hashOne(w.value) as Where["value"] };
    if (op === "in" || op === "not_in") return { ...w, value: (w.value as string[]).map(hashOne) as string[] };
    // A pattern (contains, starts_with…) cannot match a hash: refuse rather than silently match nothing.
    throw new Error(`session tokens are stored hashed: cannot match token with "${op}"`);
  });
}

function hashData<D extends Record<string, unknown>>(data: D, known: Map<string, string>): D {
  if (typeof data?.[TOKEN] !== "string") return data;
  const token = data[TOKEN] as string;
  const h = hashSessionToken(token);
  known.set(h, token);
  return { ...data, [TOKEN]: h };
}

/** The row with the token its caller presented in place of the stored hash (when the caller presented one). */
function restore<R>(row: R, known: Map<string, string>): R {
  const r = row as Row;
  if (!r || typeof r[TOKEN] !== "string") return row;
  const token = known.get(r[TOKEN] as string);
  return (token === undefined ? r : { ...r, [TOKEN]: token }) as R;
}

function wrap<A extends DBTransactionAdapter>(adapter: A): A {
  const isSession = (model: string) => SESSION_MODELS.has(model);
  const wrapped: DBTransactionAdapter = {
    ...adapter,
    async create(args) {
      if (!isSession(args.model)) return adapter.create(args);
      const known = new Map<string, string>();
      return restore(await adapter.create({ ...args, data: hashData(args.data as Record<string, unknown>, known) as typeof args.data }), known);
    },
    async findOne(args) {
      if (!isSession(args.model)) return adapter.findOne(args);
      const known = new Map<string, string>();
      return restore(await adapter.findOne({ ...args, where: hashWhere(args.where, known)! }), known);
    },
    async findMany(args) {
      if (!isSession(args.model)) return adapter.findMany(args);
      const known = new Map<string, string>();
      const rows = await adapter.findMany({ ...args, where: hashWhere(args.where, known) });
      return rows.map((r) => restore(r, known));
    },
    async count(args) {
      if (!isSession(args.model)) return adapter.count(args);
      return adapter.count({ ...args, where: hashWhere(args.where, new Map()) });
    },
    async update(args) {
      if (!isSession(args.model)) return adapter.update(args);
      const known = new Map<string, string>();
      const where = hashWhere(args.where, known)!;
      return restore(await adapter.update({ ...args, where, update: hashData(args.update, known) }), known);
    },
    async updateMany(args) {
      if (!isSession(args.model)) return adapter.updateMany(args);
      const known = new Map<string, string>();
      return adapter.updateMany({ ...args, where: hashWhere(args.where, known)!, update: hashData(args.update, known) });
    },
    async delete(args) {
      if (!isSession(args.model)) return adapter.delete(args);
      return adapter.delete({ ...args, where: hashWhere(args.where, new Map())! });
    },
    async deleteMany(args) {
      if (!isSession(args.model)) return adapter.deleteMany(args);
      return adapter.deleteMany({ ...args, where: hashWhere(args.where, new Map())! });
    },
    async consumeOne(args) {
      if (!isSession(args.model)) return adapter.consumeOne(args);
      const known = new Map<string, string>();
      return restore(await adapter.consumeOne({ ...args, where: hashWhere(args.where, known)! }), known);
    },
    async incrementOne(args) {
      if (!isSession(args.model)) return adapter.incrementOne(args);
      const known = new Map<string, string>();
      const set = args.set ? hashData(args.set, known) : undefined;
      return restore(await adapter.incrementOne({ ...args, where: hashWhere(args.where, known)!, set }), known);
    },
  };
  return wrapped as A;
}

/** Better Auth's adapter, storing session tokens hashed (in transactions too). */
export function hashSessionTokens(adapter: DBAdapter): DBAdapter {
  return {
    ...wrap(adapter),
    transaction: (callback) => adapter.transaction((trx) => callback(wrap(trx))),
  };
}
