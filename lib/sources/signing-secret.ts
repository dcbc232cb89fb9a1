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
 *
 * Rotation without an outage: a rotation keeps the previous secret (encrypted the same way) for a grace
 * period (KEYWARD_SIGNING_SECRET_GRACE_SECONDS, default 24 h, or the rotation's own `graceSeconds`), during
 * which replays are signed with both (Standard Webhooks' space-separated `webhook-signature` list), so the
 * receiver can switch to the new secret at any moment of it; after it, only the new one signs. A second
 * rotation within a grace period replaces the previous secret with the one it rotates out.
 */
import "server-only";
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { z } from "zod";
import { KeywardError } from "@/lib/errors";
import { loadEnv } from "@/lib/config/env";
import { query } from "@/lib/db/sql";
import { database, withTransaction, type Db } from "@/lib/db/transaction";
import { recordAction } from "@/lib/audit/actions";
import { authSecret } from "@/lib/auth/auth";
import type { Principal } from "@/lib/auth/principal";
import { isBrokerUrl } from "@/lib/inlets/service-url";
import type { RotatedSecret } from "./schema";

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

/** Optional body of a rotation: how long the previous secret keeps signing (0: not at all). */
export const rotateSigningSecretRequest = z.strictObject({
  graceSeconds: z
    .number()
    .int("must be a whole number of seconds")
    .min(0)
    .max(30 * 86400, "must be at most 30 days (2592000 seconds)")
    .optional(),
});

export type RotateSigningSecretRequest = z.output<typeof rotateSigningSecretRequest>;

/**
 * Generates (or rotates) a source's signing secret; the only time the secret is returned. The previous
 * secret keeps signing until `graceUntil` (null: no previous secret, or a grace of 0). Recorded.
 */
export async function rotateSigningSecret(
  name: string,
  actor: Principal,
  request: RotateSigningSecretRequest = {},
  db: Db = database(),
): Promise<RotatedSecret> {
  const graceSeconds = request.graceSeconds ?? loadEnv().KEYWARD_SIGNING_SECRET_GRACE_SECONDS;
  const secret = generateSigningSecret();
  const enc = encryptSecret(secret, await authSecret());
  return withTransaction(
    async (tx) => {
      // Raw SQL: reads the old secret under FOR UPDATE and writes the new one by the database clock, in one statement.
      const [row] = await query(
        z.object({ set_at: z.date(), had: z.boolean(), grace_until: z.date().nullable() }),
        `UPDATE sources s SET signing_secret_enc = $1, signing_secret_set_at = now(), updated_at = now(),
                signing_secret_prev_enc = CASE WHEN $2::int > 0 THEN old.enc END,
                signing_secret_grace_until = CASE WHEN $2::int > 0 AND old.enc IS NOT NULL
                                                  THEN now() + make_interval(secs => $2::int) END
         FROM (SELECT name, signing_secret_enc AS enc, signing_secret_enc IS NOT NULL AS had FROM sources WHERE name = $3 FOR UPDATE) old
         WHERE s.name = old.name
         RETURNING s.signing_secret_set_at AS set_at, old.had, s.signing_secret_grace_until AS grace_until`,
        [enc, graceSeconds, name],
        tx,
      );
      if (!row) throw KeywardError.notFound("source_not_found", `no source named "${name}"`);
      await recordAction(
        actor,
        {
          action: "source.signing_secret.rotate",
          target: { type: "source", id: name },
          source: name,
          after: { replaced: row.had, setAt: row.set_at, graceUntil: row.grace_until },
        },
        tx,
      );
      return { secret, setAt: row.set_at.toISOString(), graceUntil: row.grace_until?.toISOString() ?? null };
    },
    { db },
  );
}

/**
 * Where a replay of this source sends now, and the secrets it signs with: the current one first, then the
 * previous one while its grace period runs (by the database clock). 409 when the destination or the
 * current secret is missing or unreadable. The executor calls it at each batch, so a rotation or a new
 * destination applies from the next batch on.
 */
export async function replayTarget(
  name: string,
  db: Db = database(),
): Promise<{ url: string; brokerUrl?: string; secret: string; secrets: string[]; graceUntil: Date | null }> {
  // Raw SQL: the grace period is judged by the database clock.
  const [s] = await query(
    z.object({ replay_destination: z.string().nullable(), replay_destination_enc: z.string().nullable(), signing_secret_enc: z.string().nullable(), prev_enc: z.string().nullable(), grace_until: z.date().nullable() }),
    `SELECT replay_destination, replay_destination_enc, signing_secret_enc,
            CASE WHEN signing_secret_grace_until > now() THEN signing_secret_prev_enc END AS prev_enc,
            CASE WHEN signing_secret_grace_until > now() THEN signing_secret_grace_until END AS grace_until
     FROM sources WHERE name = $1`,
    [name],
    db,
  );
  if (!s) throw KeywardError.notFound("source_not_found", `no source named "${name}"`);
  if (!s.replay_destination) {
    throw KeywardError.conflict("replay_destination_missing", `source "${name}" has no replay destination: set replayDestination (PATCH /api/v1/sources/${name})`);
  }
  if (!s.signing_secret_enc) {
    throw KeywardError.conflict("signing_secret_missing", `source "${name}" has no signing secret: generate one (POST /api/v1/sources/${name}/signing-secret)`);
  }
  const key = await authSecret();
  const secret = decryptSecret(s.signing_secret_enc, key);
  if (secret === null) {
    throw KeywardError.conflict(
      "signing_secret_unreadable",
      `the signing secret of "${name}" cannot be decrypted (the auth secret changed?): generate a new one`,
    );
  }
  // A broker destination: `url` is what the progress shows (password masked), `brokerUrl` what is published to.
  // (Kept whole and encrypted by lib/sources/replay-destination.ts; one without credentials needs nothing decrypted.)
  const brokerUrl = !isBrokerUrl(s.replay_destination)
    ? undefined
    : s.replay_destination_enc === null
      ? s.replay_destination
      : decryptSecret(s.replay_destination_enc, key);
  if (brokerUrl === null) {
    throw KeywardError.conflict(
      "replay_destination_unreadable",
      `the replay destination of "${name}" cannot be decrypted (the auth secret changed?): set it again`,
    );
  }
  // An unreadable previous secret only loses the overlap; the current one still signs.
  const previous = s.prev_enc ? decryptSecret(s.prev_enc, key) : null;
  return {
    url: s.replay_destination,
    ...(brokerUrl !== undefined ? { brokerUrl } : {}),
    secret,
    secrets: previous ? [secret, previous] : [secret],
    graceUntil: previous ? s.grace_until : null,
  };
}
