/** Helpers for the replay tests: dead letters through the intake, a source ready to replay, key states on demand. */
import { cliPrincipal } from "@/lib/auth/principal";
import { recordDeadLetters } from "@/lib/deadletters/intake";
import { updateSource } from "@/lib/sources/sources";
import { rotateSigningSecret } from "@/lib/sources/signing-secret";
import { sql } from "./db";

/** Stores one dead letter per event id (payload `{ id, n }`); returns their ids in order. */
export async function seedDeadLetters(source: string, eventIds: string[], o: { error?: string; failedAt?: string } = {}): Promise<string[]> {
  const results = await recordDeadLetters(
    {
      items: eventIds.map((eventId, n) => ({
        source,
        eventId,
        eventType: "order.paid",
        payload: { id: eventId, n },
        error: o.error ?? "consumer crashed",
        ...(o.failedAt ? { failedAt: o.failedAt } : {}),
      })),
    },
    "test",
  );
  return results.map((r) => {
    if (!("id" in r)) throw new Error(`seed failed: ${JSON.stringify(r)}`);
    return r.id;
  });
}

/** Sets the source's replay destination and generates its signing secret; returns the secret. */
export async function readyForReplay(source: string, url: string): Promise<string> {
  await updateSource(source, { replayDestination: url }, cliPrincipal());
  return (await rotateSigningSecret(source, cliPrincipal())).secret;
}

/** Sets a key's expiry to now + `seconds` (negative: expired), by the database clock. */
export async function setKeyExpiry(source: string, eventId: string, seconds: number): Promise<void> {
  await sql("UPDATE dedup_keys SET expires_at = now() + make_interval(secs => $3::float8) WHERE source = $1 AND event_id = $2", [
    source,
    eventId,
    seconds,
  ]);
}
