/** Changing a source: applies to new claims only; extending live keys is explicit, never shortens; all recorded. */
import { describe, expect, it } from "vitest";
import { createSource, extendLiveKeys, sourceReports, updateSource } from "@/lib/sources/sources";
import { claimEvent } from "@/lib/claims/claim";
import { cliPrincipal } from "@/lib/auth/principal";
import { sql, uniq } from "@/test/setup/db";
import { createSourceRequest, updateSourceRequest } from "@/lib/sources/schema";
import { parseInput } from "@/lib/http/validate";

const ACTOR = cliPrincipal();
const d = 86400;

async function expiresIn(source: string, eventId: string): Promise<number> {
  const [r] = await sql<{ s: number }>(
    "SELECT extract(epoch FROM expires_at - now())::float8 AS s FROM dedup_keys WHERE source = $1 AND event_id = $2",
    [source, eventId],
  );
  return r.s;
}

describe("updateSource", () => {
  it("changes the TTL for new claims only, records before/after, and keeps live keys' expiry", async () => {
    const name = uniq("upd");
    await createSource(parseInput(createSourceRequest, { name, preset: "internal" }), ACTOR);
    await claimEvent({ source: name, eventId: "old", eventType: "t" });
    const updated = await updateSource(name, { preset: "stripe", deadLetterRetentionSeconds: 2 * d }, ACTOR);
    expect(updated).toMatchObject({ ttlSeconds: 7 * d, preset: "stripe", deadLetterRetentionSeconds: 2 * d });
    await claimEvent({ source: name, eventId: "new", eventType: "t" });
    expect(await expiresIn(name, "old")).toBeLessThanOrEqual(d);
    expect(await expiresIn(name, "new")).toBeGreaterThan(7 * d - 60);

    const [action] = await sql<{ actor: string; before: { ttlSeconds: number }; after: { ttlSeconds: number; preset: string } }>(
      `SELECT actor, detail->'before' AS before, detail->'after' AS after FROM audit_events
       WHERE kind = 'operator' AND detail->>'action' = 'source.update' AND source = $1`,
      [name],
    );
    expect(action.actor).toBe(`cli:${ACTOR.name}`);
    expect(action.before.ttlSeconds).toBe(d);
    expect(action.after).toMatchObject({ ttlSeconds: 7 * d, preset: "stripe" });
  });

  it("saveResults: off by default, turned on and off alone (the TTL untouched), recorded, refused unless a boolean", async () => {
    const name = uniq("upd");
    const created = await createSource(parseInput(createSourceRequest, { name, preset: "internal" }), ACTOR);
    expect(created.saveResults).toBe(false);
    const on = await updateSource(name, parseInput(updateSourceRequest, { saveResults: true }), ACTOR);
    expect([on.saveResults, on.ttlSeconds]).toEqual([true, created.ttlSeconds]);
    const [action] = await sql<{ before: { saveResults: boolean }; after: { saveResults: boolean } }>(
      `SELECT detail->'before' AS before, detail->'after' AS after FROM audit_events
       WHERE kind = 'operator' AND detail->>'action' = 'source.update' AND source = $1`,
      [name],
    );
    expect([action.before.saveResults, action.after.saveResults]).toEqual([false, true]);
    expect((await updateSource(name, parseInput(updateSourceRequest, { saveResults: false }), ACTOR)).saveResults).toBe(false);
    expect(() => parseInput(updateSourceRequest, { saveResults: "yes" })).toThrow(expect.objectContaining({ status: 422 }));
    const withIt = await createSource(parseInput(createSourceRequest, { name: uniq("upd"), preset: "internal", saveResults: true }), ACTOR);
    expect(withIt.saveResults).toBe(true);
  });

  it("refuses a TTL over 90 days, an empty change, an unknown source", async () => {
    const name = uniq("upd");
    await createSource(parseInput(createSourceRequest, { name, preset: "saas" }), ACTOR);
    await expect(updateSource(name, { replaySeconds: 100 * d }, ACTOR)).rejects.toMatchObject({ status: 422 });
    expect(() => parseInput(updateSourceRequest, {})).toThrow(expect.objectContaining({ status: 422 }));
    await expect(updateSource(uniq("none"), { preset: "saas" }, ACTOR)).rejects.toMatchObject({ status: 404 });
    const [row] = await sql<{ ttl_seconds: number }>("SELECT ttl_seconds FROM sources WHERE name = $1", [name]);
    expect(row.ttl_seconds).toBe(3 * d);
  });
});

describe("extendLiveKeys", () => {
  it("extends live keys to the current TTL from their claim, never shortens, skips expired ones", async () => {
    const name = uniq("ext");
    await createSource(parseInput(createSourceRequest, { name, preset: "internal" }), ACTOR);
    await claimEvent({ source: name, eventId: "live", eventType: "t" });
    await claimEvent({ source: name, eventId: "dead", eventType: "t" });
    await sql("UPDATE dedup_keys SET expires_at = now() - interval '1 minute' WHERE source = $1 AND event_id = 'dead'", [name]);
    await updateSource(name, { preset: "stripe" }, ACTOR);
    const r = await extendLiveKeys(name, ACTOR);
    expect(r).toEqual({ source: name, ttlSeconds: 7 * d, extended: 1 });
    expect(await expiresIn(name, "live")).toBeGreaterThan(7 * d - 60);
    expect(await expiresIn(name, "dead")).toBeLessThan(0);

    // Shortening the TTL and extending again changes nothing.
    await updateSource(name, { preset: "internal" }, ACTOR);
    expect((await extendLiveKeys(name, ACTOR)).extended).toBe(0);
    expect(await expiresIn(name, "live")).toBeGreaterThan(7 * d - 60);

    const [{ n }] = await sql<{ n: number }>(
      "SELECT count(*) AS n FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'source.extend_keys' AND source = $1",
      [name],
    );
    expect(n).toBe(2);
  });
});

describe("sourceReports", () => {
  it("reports invariants and a projection from the recent claim rate", async () => {
    const name = uniq("rep");
    await createSource(parseInput(createSourceRequest, { name, preset: "payments", deadLetterRetentionSeconds: 30 * d }), ACTOR);
    await sql("INSERT INTO claim_counts (bucket, source, claimed, duplicate, in_flight, payload_mismatch) VALUES (date_trunc('minute', now()), $1, 3600, 0, 0, 0)", [name]);
    const [r] = await sourceReports(name);
    expect(r.projection.claimRate).toBeCloseTo(1, 5);
    expect(r.projection.keys).toBe(7 * d);
    expect(r.projection.bytes).toBe(r.projection.keys * r.projection.bytesPerKey);
    expect(r.invariants.find((i) => i.id === "dead_letters_within_keys")!.ok).toBe(false);
    expect(r.invariants.find((i) => i.id === "ttl_floor")!.ok).toBe(true);
  });
});
