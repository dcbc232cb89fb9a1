/** Inputs and timings at the edges: text PostgreSQL cannot store as sent, leases longer than the TTL. */
import { describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { KeywardError } from "@/lib/errors";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { parseInput } from "@/lib/http/validate";
import { claimRequest } from "@/lib/claims/schema";

const rejection = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);

describe("claim input that PostgreSQL would not store as sent", () => {
  it.each([
    ["a lone high surrogate in eventId", { eventId: "y\ud800" }, "eventId"],
    ["a lone low surrogate in eventId", { eventId: "\udc00y" }, "eventId"],
    ["a NUL in eventType", { eventType: "a\u0000b" }, "eventType"],
    ["a lone surrogate in eventType", { eventType: "t\udbff" }, "eventType"],
  ])("%s → 422 naming the field, and nothing is stored", async (_label, override, field) => {
    const source = await makeSource();
    // As the route and the CLI take it: parsed by claimRequest first.
    const err = await rejection((async () => claimEvent(parseInput(claimRequest, { source, eventId: uniq("e"), eventType: "t", ...override })))());
    expect(err).toBeInstanceOf(KeywardError);
    expect((err as KeywardError).status).toBe(422);
    expect((err as KeywardError).message).toContain(`${field}:`);
    const [n] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1", [source]);
    expect(n.n).toBe(0);
  });

  it("accepts a well-formed astral character (a surrogate pair)", async () => {
    const source = await makeSource();
    const eventId = `evt_😀_${uniq()}`;
    expect((await claimEvent({ source, eventId, eventType: "t" })).outcome).toBe("claimed");
    expect((await claimEvent({ source, eventId, eventType: "t" })).outcome).toBe("duplicate");
  });
});

describe("a lease longer than the source's TTL", () => {
  it("keeps the key alive until the lease ends, so no second worker can reclaim it mid-lease", async () => {
    const source = await makeSource(60);
    const eventId = uniq("long");
    const first = await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 3600 });
    expect(first.outcome).toBe("claimed");
    expect(first.expiresAt).toBe(first.leaseExpiresAt);
    const [row] = await sql<{ ok: boolean }>(
      "SELECT expires_at >= lease_expires_at AND expires_at >= now() + interval '3599 seconds' AS ok FROM dedup_keys WHERE source = $1 AND event_id = $2",
      [source, eventId],
    );
    expect(row.ok).toBe(true);
    expect((await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 60 })).outcome).toBe("in_flight");
  });

  it("extends the key on a lease takeover whose lease outlasts it", async () => {
    const source = await makeSource(60);
    const eventId = uniq("takeover");
    await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 30 });
    await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, eventId]);
    const taken = await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 3600 });
    expect(taken).toMatchObject({ outcome: "claimed", claimKind: "lease_takeover" });
    expect(Date.parse(taken.expiresAt)).toBeGreaterThanOrEqual(Date.parse(taken.leaseExpiresAt!));
  });
});
