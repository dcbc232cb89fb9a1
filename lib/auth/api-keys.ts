/**
 * API keys for machines. A key looks like `kw_<id>_<secret>`; only SHA-256(key) is stored. Verification
 * looks the row up by its public id and compares hashes in constant time. In `keyward start`, verified keys
 * are remembered in process (api-key-cache.ts): a revoked key is refused by every server within
 * REVOCATION_BOUND_MS (1 s) of the revocation's commit, and by the process that revoked it at once.
 */
import "server-only";
import { z } from "zod";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { KeywardError } from "@/lib/errors";
import { isUniqueViolation } from "@/lib/db/errors";
import { execute, query, type PreparedSql } from "@/lib/db/sql";
import { database, withTransaction, type Db } from "@/lib/db/transaction";
import type { NewApiKey } from "./schema";
import { recordAction } from "@/lib/audit/actions";
import type { ApiKeyPrincipal, Principal } from "./principal";
import { cacheGeneration, cachedApiKey, forgetApiKey, rememberApiKey } from "./api-key-cache";

export type ApiKeyInfo = {
  id: string;
  name: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
};

const KEY_PATTERN = /^kw_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$/;

const sha256 = (text: string) => createHash("sha256").update(text).digest();

/** Creates a key; the returned `key` is the only time it exists in clear. Recorded as `api_key.create`. */
export async function createApiKey(
  { name, scopes }: NewApiKey,
  actor: Principal,
  db: Db = database(),
): Promise<ApiKeyInfo & { key: string }> {
  const id = randomBytes(9).toString("base64url").toLowerCase().replace(/[^a-z0-9]/g, "0").slice(0, 12);
  const key = `kw_${id}_${randomBytes(32).toString("base64url")}`;
  try {
    const row = await withTransaction(
      async (tx) => {
        const created = await tx.prisma.apiKey.create({
          data: { id, name, scopes: [...new Set(scopes)], keyHash: sha256(key).toString("hex") },
        });
        await recordAction(actor, { action: "api_key.create", target: { type: "api_key", id }, after: { name, scopes: created.scopes } }, tx);
        return created;
      },
      { db },
    );
    return { ...toInfo(row), key };
  } catch (err) {
    if (isUniqueViolation(err)) throw KeywardError.conflict("api_key_exists", `an API key named "${name}" already exists`);
    throw err;
  }
}

export async function listApiKeys(db: Db = database()): Promise<ApiKeyInfo[]> {
  const rows = await db.prisma.apiKey.findMany({ orderBy: { createdAt: "asc" } });
  return rows.map(toInfo);
}

/** Revokes by id or name. Revoking twice is harmless (and not recorded twice); an unknown key is a 404. */
export async function revokeApiKey(idOrName: string, actor: Principal, db: Db = database()): Promise<ApiKeyInfo> {
  // The id wins: a key may be named like another key's id, and revoking by id must hit that id.
  const row =
    (await db.prisma.apiKey.findUnique({ where: { id: idOrName } })) ?? (await db.prisma.apiKey.findUnique({ where: { name: idOrName } }));
  if (!row) throw KeywardError.notFound("api_key_not_found", `no API key with id or name "${idOrName}"`);
  if (row.revokedAt) return toInfo(row);
  return withTransaction(
    async (tx) => {
      const revoked = await tx.prisma.apiKey.update({ where: { id: row.id }, data: { revokedAt: new Date() } });
      await recordAction(
        actor,
        { action: "api_key.revoke", target: { type: "api_key", id: row.id }, before: { name: row.name, revoked: false }, after: { revoked: true } },
        tx,
      );
      return toInfo(revoked);
    },
    { db },
  ).finally(() => forgetApiKey(row.id));
}

const VERIFY_KEY_SQL: PreparedSql = {
  name: "keyward_verify_api_key",
  text: `WITH k AS (SELECT id, name, scopes, key_hash, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE id = $1),
     touched AS (UPDATE api_keys SET last_used_at = now()
                 WHERE id = $1 AND key_hash = $2 AND revoked_at IS NULL
                   AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute'))
     SELECT * FROM k`,
};

const STAMP_KEY_SQL: PreparedSql = {
  name: "keyward_stamp_api_key",
  text: `UPDATE api_keys SET last_used_at = now()
         WHERE id = $1 AND revoked_at IS NULL AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
};
const STAMP_EVERY_MS = 60_000;

/**
 * Verifies a presented key: from the in-process cache when it may be trusted (api-key-cache.ts), otherwise
 * one indexed read, which also stamps last_used_at at most once a minute (so the claim hot path does not
 * write the key row on every request). A key answered from the cache gets that stamp off the hot path.
 * Returns null if invalid. Raw SQL: it runs before every uncached claim, as a named prepared statement
 * (docs/benchmarks.md).
 */
export async function verifyApiKey(presented: string, db?: Db): Promise<ApiKeyPrincipal | null> {
  const m = KEY_PATTERN.exec(presented);
  if (!m) return null;
  const id = m[1];
  const given = sha256(presented);
  const cached = cachedApiKey(id);
  if (cached) {
    if (!timingSafeEqual(cached.keyHash, given)) return null;
    const now = performance.now();
    if (now - cached.stampedAt >= STAMP_EVERY_MS) {
      cached.stampedAt = now;
      void execute(STAMP_KEY_SQL, [id]).catch(() => {});
    }
    return cached.principal;
  }
  const generation = cacheGeneration();
  const rows = await query(
    z.object({ id: z.string(), name: z.string(), scopes: z.array(z.string()), key_hash: z.string(), revoked: z.boolean() }),
    VERIFY_KEY_SQL,
    [id, given.toString("hex")],
    db,
  );
  const row = rows[0];
  if (!row) return null;
  const stored = Buffer.from(row.key_hash, "hex");
  if (stored.length !== given.length || !timingSafeEqual(stored, given) || row.revoked) return null;
  const principal: ApiKeyPrincipal = { kind: "apikey", id: row.id, name: row.name, capabilities: row.scopes ?? [] };
  rememberApiKey(id, { keyHash: stored, principal, stampedAt: performance.now() }, generation);
  return principal;
}

function toInfo(row: { id: string; name: string; scopes: string[]; createdAt: Date; lastUsedAt: Date | null; revokedAt: Date | null }): ApiKeyInfo {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes,
    createdAt: row.createdAt,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
  };
}
