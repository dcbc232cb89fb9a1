/** Sources: TTL = retry window + queue lag + clock skew + replay, finite, enforced by zod and by the database. */
import { describe, expect, it } from "vitest";
import { createSource, listSources } from "@/lib/sources/sources";
import { createSourceRequest, MAX_TTL_SECONDS } from "@/lib/sources/schema";
import { claimEvent } from "@/lib/claims/claim";
import { sql, uniq } from "@/test/setup/db";

import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";

const ACTOR = cliPrincipal();
const parts = { retryWindowSeconds: 3 * 86400, queueLagSeconds: 86400, clockSkewSeconds: 300, replaySeconds: 3 * 86400 };

describe("createSourceRequest", () => {
  it("accepts parts up to a 90-day TTL", () => {
    expect(MAX_TTL_SECONDS).toBe(7776000);
    expect(createSourceRequest.safeParse({ name: "s", ...parts }).success).toBe(true);
    const edge = { name: "s", retryWindowSeconds: MAX_TTL_SECONDS - 3, queueLagSeconds: 1, clockSkewSeconds: 1, replaySeconds: 1 };
    expect(createSourceRequest.safeParse(edge).success).toBe(true);
  });

  it("rejects a TTL over 90 days, naming ttlSeconds", () => {
    const r = createSourceRequest.safeParse({ name: "s", ...parts, replaySeconds: MAX_TTL_SECONDS });
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.path.join("."))).toEqual(["ttlSeconds"]);
    expect(r.error!.issues[0].message).toMatch(/90 days/);
  });

  it("rejects a zero retry window, negative or fractional parts, bad names, extra fields", () => {
    const bad = (over: Record<string, unknown>) => createSourceRequest.safeParse({ name: "s", ...parts, ...over }).success;
    expect(bad({ retryWindowSeconds: 0 })).toBe(false);
    expect(bad({ queueLagSeconds: -1 })).toBe(false);
    expect(bad({ clockSkewSeconds: 1.5 })).toBe(false);
    expect(bad({ name: "Stripe" })).toBe(false);
    expect(bad({ ttlSeconds: 5 })).toBe(false);
    expect(bad({ queueLagSeconds: 0, clockSkewSeconds: 0, replaySeconds: 0 })).toBe(true);
  });
});

describe("createSource / listSources", () => {
  it("stores TTL = the sum of the four parts and lists the source", async () => {
    const name = uniq("src");
    const s = await createSource(parseInput(createSourceRequest, { name, ...parts }), ACTOR);
    expect(s.ttlSeconds).toBe(3 * 86400 + 86400 + 300 + 3 * 86400);
    const [row] = await sql<{ ttl_seconds: number }>("SELECT ttl_seconds FROM sources WHERE name = $1", [name]);
    expect(row.ttl_seconds).toBe(s.ttlSeconds);
    const listed = (await listSources()).find((x) => x.name === name);
    expect(listed).toMatchObject({ name, ...parts, ttlSeconds: s.ttlSeconds });
  });

  it("lists sources sorted by name", async () => {
    const names = await Promise.all(["zz", "aa", "mm"].map(async (p) => (await createSource(parseInput(createSourceRequest, { name: uniq(p), ...parts }), ACTOR)).name));
    const listed = (await listSources()).map((s) => s.name).filter((n) => names.includes(n));
    expect(listed).toEqual([...names].sort());
  });

  it("a second source with the same name → 409 source_exists", async () => {
    const name = uniq("src");
    await createSource(parseInput(createSourceRequest, { name, ...parts }), ACTOR);
    await expect(createSource(parseInput(createSourceRequest, { name, ...parts }), ACTOR)).rejects.toMatchObject({ status: 409, code: "source_exists" });
  });

  it("invalid input → 422 naming the fields", async () => {
    // Refused by the schema the route and the CLI parse with, before createSource.
    expect(() => parseInput(createSourceRequest, { name: "Bad Name", ...parts, retryWindowSeconds: 0 })).toThrow(
      expect.objectContaining({
        status: 422,
        details: { fields: expect.arrayContaining([expect.objectContaining({ field: "name" }), expect.objectContaining({ field: "retryWindowSeconds" })]) },
      }),
    );
  });

  it("the database itself refuses a TTL that is not the sum of its parts, or infinite", async () => {
    await expect(
      sql(
        `INSERT INTO sources (name, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds)
         VALUES ($1, 10, 0, 0, 0, 11)`,
        [uniq("src")],
      ),
    ).rejects.toMatchObject({ code: "23514" });
    await expect(
      sql(
        `INSERT INTO sources (name, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds)
         VALUES ($1, 7776001, 0, 0, 0, 7776001)`,
        [uniq("src")],
      ),
    ).rejects.toMatchObject({ code: "23514" });
  });

  it("claims on a new source expire after exactly its TTL", async () => {
    const name = uniq("src");
    const s = await createSource(parseInput(createSourceRequest, { name, retryWindowSeconds: 60, queueLagSeconds: 30, clockSkewSeconds: 5, replaySeconds: 25 }), ACTOR);
    const eventId = uniq("evt");
    await claimEvent({ source: name, eventId, eventType: "t" });
    const [row] = await sql<{ exact: boolean }>(
      "SELECT expires_at - received_at = make_interval(secs => $3) AS exact FROM dedup_keys WHERE source = $1 AND event_id = $2",
      [name, eventId, s.ttlSeconds],
    );
    expect(s.ttlSeconds).toBe(120);
    expect(row.exact).toBe(true);
  });
});
