/** The state of one dedup key now, by the database clock: alive (with time left), expired, or unknown. */
import "server-only";
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { claimStatus, type ClaimKey, type KeyState } from "./schema";
import type { Db } from "@/lib/db/transaction";

const StateRow = z.object({
  event_type: z.string(),
  status: claimStatus,
  received_at: z.date(),
  expires_at: z.date(),
  seconds_left: z.number(),
  alive: z.boolean(),
  duplicate_count: z.number(),
  last_duplicate_at: z.date().nullable(),
  lease_expires_at: z.date().nullable(),
  result_saved: z.boolean(),
});

/** Raw SQL: on the claim path's fast route; time left by the database clock. */
export async function getKeyState({ source, eventId }: ClaimKey, db?: Db): Promise<KeyState> {
  const [row] = await query(
    StateRow,
    `SELECT event_type, status, received_at, expires_at, duplicate_count, last_duplicate_at, lease_expires_at,
            result_status IS NOT NULL AS result_saved,
            expires_at > now() AS alive,
            greatest(0, floor(extract(epoch FROM expires_at - now())))::int AS seconds_left
     FROM dedup_keys WHERE source = $1 AND event_id = $2`,
    [source, eventId],
    db,
  );
  if (!row) return { state: "unknown", source, eventId };
  return {
    state: row.alive ? "alive" : "expired",
    source,
    eventId,
    eventType: row.event_type,
    status: row.status,
    firstSeenAt: row.received_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    secondsLeft: row.seconds_left,
    duplicateCount: row.duplicate_count,
    lastDuplicateAt: row.last_duplicate_at?.toISOString() ?? null,
    leaseExpiresAt: row.lease_expires_at?.toISOString() ?? null,
    resultSaved: row.result_saved,
  };
}
