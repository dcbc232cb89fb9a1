/**
 * The in-process library inside the caller's own transaction (`{}, connectionDb(client)`): the claim commits or
 * rolls back together with the caller's side effects, audit row included.
 */
import { connectionDb } from "@/lib/db/transaction";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { getKeyState } from "@/lib/claims/state";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { makeSource, sql, uniq } from "@/test/setup/db";

let client: pg.Client;
beforeAll(async () => {
  client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
});
afterAll(async () => {
  await client.end();
});

const auditRows = async (source: string, eventId: string) =>
  (await sql<{ n: number }>("SELECT count(*) AS n FROM audit_events WHERE source = $1 AND event_id = $2", [source, eventId]))[0].n;

describe("claimEvent inside the caller's transaction", () => {
  it("rolls back with the caller: no key, no audit row, and the event can be claimed again", async () => {
    const source = await makeSource();
    const eventId = uniq("tx");
    await client.query("BEGIN");
    const inside = await claimEvent({ source, eventId, eventType: "charge" }, { actor: "checkout" }, connectionDb(client));
    expect(inside.outcome).toBe("claimed");
    // Seen inside the transaction, invisible outside it until it commits.
    expect((await getKeyState({ source, eventId }, connectionDb(client))).state).toBe("alive");
    expect((await getKeyState({ source, eventId })).state).toBe("unknown");
    await client.query("ROLLBACK");

    expect((await getKeyState({ source, eventId })).state).toBe("unknown");
    expect(await auditRows(source, eventId)).toBe(0);
    // The rolled-back claim is not counted either; the pool claim after it is.
    expect((await claimEvent({ source, eventId, eventType: "charge" })).outcome).toBe("claimed");
    await flushClaimCounts();
    const [counts] = await sql<{ claimed: number }>("SELECT coalesce(sum(claimed), 0)::int AS claimed FROM claim_counts WHERE source = $1", [source]);
    expect(counts.claimed).toBe(1);
  });

  it("commits with the caller; a second claim in the same transaction is a duplicate", async () => {
    const source = await makeSource();
    const eventId = uniq("tx");
    await client.query("BEGIN");
    expect((await claimEvent({ source, eventId, eventType: "charge" }, {}, connectionDb(client))).outcome).toBe("claimed");
    expect((await claimEvent({ source, eventId, eventType: "charge" }, {}, connectionDb(client))).outcome).toBe("duplicate");
    await client.query("COMMIT");
    const [row] = await sql<{ actor: string; kind: string }>(
      "SELECT actor, kind FROM audit_events WHERE source = $1 AND event_id = $2",
      [source, eventId],
    );
    expect(row).toEqual({ actor: "library", kind: "claimed" });
    expect((await getKeyState({ source, eventId })).duplicateCount).toBe(1);
  });
});
