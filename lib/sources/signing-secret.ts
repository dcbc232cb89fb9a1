/**
 * Each source's Standard Webhooks signing secret (`whsec_` + base64 of 32 random bytes), with which replays
 * are signed so the destination can tell a Keyward replay from a forgery.
 *
 * Storage: encrypted at rest with AES-256-GCM under a key derived (HKDF-SHA256) from the auth secret
 * (KEYWARD_AUTH_SECRET, or the one generated and kept in `settings`). The secret is returned once, by the
 * call that generates it; afterwards only `signingSecretSetAt` is visible. Trade-off (docs/replay.md):
 * with KEYWARD_AUTH_SECRET set, a copy of the database alone does not reveal the secrets; without it the
 * key sits in the same database, so encryption only keeps the secret out of casual reads of `sources`
 * (exports, query results, logs). Changing the auth secret makes stored signing secrets unreadable:
 * replays then refuse with `signing_secret_unreadable` until the secret is generated again.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { KeywardError } from "../errors";
import { prisma } from "../db/client";
import { parseOrThrow } from "../http/validate";
import { recordAction } from "../audit/actions";
import { authSecret } from "../auth/auth";
import type { Principal } from "../auth/principal";
import { sourceName } from "../claims/schema";

const FORMAT = "v1";

function keyFrom(secret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", secret, "keyward", "source-signing-secret v1", 32));
}

/** Pure: encrypts `plain` under a key derived from `secret` (random IV; `v1:<iv>:<tag>:<ciphertext>`). */
export function encryptSecret(plain: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyFrom(secret), iv);
  const ct = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return [FORMAT, iv.toString("base64"), cipher.getAuthTag().toString("base64"), ct.toString("base64")].join(":");
}

/** Pure: the plain text, or null when `stored` was not encrypted under this secret (or is damaged). */
export function decryptSecret(stored: string, secret: string): string | null {
  const [format, iv, tag, ct] = stored.split(":");
  if (format !== FORMAT || !iv || !tag || ct === undefined) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyFrom(secret), Buffer.from(iv, "base64"));
    decipher.setAuthTag(Buffer.from(tag, "base64"));
    return Buffer.concat([decipher.update(Buffer.from(ct, "base64")), decipher.final()]).toString("utf8");
  } catch {
    return null;
  }
}

export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/** Generates (or rotates) a source's signing secret; the only time the secret is returned. Recorded. */
export async function rotateSigningSecret(name: string, actor: Principal): Promise<{ secret: string; setAt: string }> {
  const n = parseOrThrow(sourceName, name);
  const secret = generateSigningSecret();
  const enc = encryptSecret(secret, await authSecret());
  return prisma().$transaction(async (tx) => {
    const [row] = await tx.$queryRaw<{ set_at: Date; had: boolean }[]>`
      UPDATE sources s SET signing_secret_enc = ${enc}, signing_secret_set_at = now(), updated_at = now()
      FROM (SELECT name, signing_secret_enc IS NOT NULL AS had FROM sources WHERE name = ${n} FOR UPDATE) old
      WHERE s.name = old.name
      RETURNING s.signing_secret_set_at AS set_at, old.had`;
    if (!row) throw KeywardError.notFound("source_not_found", `no source named "${n}"`);
    await recordAction(
      actor,
      { action: "source.signing_secret.rotate", target: { type: "source", id: n }, source: n, after: { replaced: row.had, setAt: row.set_at } },
      tx,
    );
    return { secret, setAt: row.set_at.toISOString() };
  });
}

/** The source's destination and signing secret for a delivery; 409 when either is missing or unreadable. */
export async function replayTarget(name: string): Promise<{ url: string; secret: string }> {
  const s = await prisma().source.findUnique({ where: { name }, select: { replayDestination: true, signingSecretEnc: true } });
  if (!s) throw KeywardError.notFound("source_not_found", `no source named "${name}"`);
  if (!s.replayDestination) {
    throw KeywardError.conflict("replay_destination_missing", `source "${name}" has no replay destination: set replayDestination (PATCH /api/v1/sources/${name})`);
  }
  if (!s.signingSecretEnc) {
    throw KeywardError.conflict("signing_secret_missing", `source "${name}" has no signing secret: generate one (POST /api/v1/sources/${name}/signing-secret)`);
  }
  const secret = decryptSecret(s.signingSecretEnc, await authSecret());
  if (secret === null) {
    throw KeywardError.conflict(
      "signing_secret_unreadable",
      `the signing secret of "${name}" cannot be decrypted (the auth secret changed?): generate a new one`,
    );
  }
  return { url: s.replayDestination, secret };
}
