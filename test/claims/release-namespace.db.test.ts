/**
 * A release in a process without Redis (lib/claims/redis.ts forgetReleasedKey): on a database Redis was never
 * used with (no settings.redis_epoch) it moves no namespace, so it opens no connection of its own; once a
 * server registered Redis with the database, a release that cannot confirm INVALIDATE moves every server to
 * a new namespace (redis_epoch + 1). In a database of this file's own, where no server registered Redis.
 */
import { describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { redisStats } from "@/lib/claims/redis";
import { releaseClaim } from "@/lib/claims/settle";
import { makeSource, sql, uniq } from "@/test/setup/db";


const epoch = async () => (await sql<{ value: string }>("SELECT value FROM settings WHERE key = 'redis_epoch'"))[0]?.value ?? null;

describe("a release without Redis", () => {
  it("moves no namespace where Redis was never used; moves it once a server registered Redis", async () => {
    const source = await makeSource();
    expect(await epoch()).toBeNull();
    const movesBefore = redisStats().moves;
    const ids = Array.from({ length: 8 }, () => uniq("rel"));
    for (const eventId of ids) await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 60 });
    const released = await Promise.all(ids.map((eventId) => releaseClaim({ source, eventId })));
    expect(released.map((r) => r.status)).toEqual(ids.map(() => "released"));
    expect(redisStats().moves).toBe(movesBefore);
    expect(await sql("SELECT 1 FROM dedup_keys WHERE source = $1", [source])).toHaveLength(0);

    // A server with KEYWARD_REDIS_URL registered Redis with this database (lib/server/start.ts).
    await sql("INSERT INTO settings (key, value) VALUES ('redis_epoch', '1')");
    const eventId = uniq("rel");
    await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 60 });
    expect((await releaseClaim({ source, eventId })).status).toBe("released");
    expect(redisStats().moves).toBe(movesBefore + 1);
    expect(await epoch()).toBe("2");
  });
});
