/** The state of one dedup key now, by the database clock: alive (with time left), expired, or unknown. */
import "server-only";
import { query, type Queryable } from "../db/sql";
import type { ClaimKey, ClaimStatus, KeyState } from "./schema";

type StateRow = {
  event_type: string;
  status: ClaimStatus;
  received_at: Date;
  expires_at: Date;
  seconds_left: number;
  alive: boolean;
  duplicate_count: number;
  last_duplicate_at: Date | null;
  lease_expires_at: Date | null;
};

/** Raw SQL: on the claim path's fast route; time left by the database clock. */
export async function getKeyState({ source, eventId }: ClaimKey, on?: Queryable): Promise<KeyState> {
  const [row] = await query<StateRow>(
    `SELECT event_type, status, received_at, expires_at, duplicate_count, last_duplicate_at, lease_expires_at,
            expires_at > now() AS alive,
            greatest(0, floor(extract(epoch FROM expires_at - now())))::int AS seconds_left
     FROM dedup_keys WHERE source = $1 AND event_id = $2`,
    [source, eventId],
    on,
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
  };
}
