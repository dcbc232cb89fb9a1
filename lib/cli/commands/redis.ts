/**
 * `keyward redis forget <source> [<event id>…]`: makes the Redis first line forget keys changed by hand in
 * SQL (lib/claims/redis.ts). With event ids and KEYWARD_REDIS_URL set, their entries are deleted and
 * tombstoned (as a release does); without ids, or when Redis cannot be reached, every server moves to a new
 * Redis namespace, which forgets every entry of every source. Both are safe by the first line's invariant;
 * flushing Redis is always safe too.
 */
import type { Command } from "commander";
import { z } from "zod";
import { loadEnv } from "@/lib/config/env";
import { parseInput } from "@/lib/http/validate";
import { eventId, sourceName } from "@/lib/claims/schema";
import { invalidateKeys, moveRedisNamespace, withInvalidator } from "@/lib/claims/redis";
import { withDatabase } from "@/lib/cli/io";

const forgetRequest = z.strictObject({ source: sourceName, eventIds: z.array(eventId).max(1000) });

export function registerRedis(program: Command): void {
  const redis = program.command("redis").description("the Redis first line (KEYWARD_REDIS_URL)");
  redis
    .command("forget")
    .description(
      "forget keys in Redis after changing them in SQL: the given event ids' entries (tombstoned, as a release does), " +
        "or with no ids every entry (all servers move to a new Redis namespace within 1 s)",
    )
    .argument("<source>", "the source of the keys")
    .argument("[eventIds...]", "event ids (none: forget every entry of every source)")
    .action(async (source: string, eventIds: string[]) => {
      const request = parseInput(forgetRequest, { source, eventIds });
      await withDatabase(async () => {
        const url = loadEnv().KEYWARD_REDIS_URL;
        if (request.eventIds.length > 0 && url) {
          const keys = request.eventIds.map((id) => ({ source: request.source, eventId: id }));
          if (await withInvalidator(url, () => invalidateKeys(keys))) {
            return console.log(`forgot ${keys.length} key${keys.length === 1 ? "" : "s"} of ${request.source} in Redis`);
          }
          console.log("Redis did not confirm within 1 s: moving every server to a new namespace instead");
        }
        if (await moveRedisNamespace()) console.log("every server now uses a new Redis namespace: no earlier entry is answered");
        else console.log("no server has used Redis with this database: nothing to forget");
      });
    });
}
