/**
 * The 503 path: an unreachable database and a statement that times out both answer 503
 * database_unavailable with Retry-After, and a response never says "claimed" unless the claim committed.
 *
 * These tests swap the process's pool (DATABASE_URL / statement timeout + closeDb()), so they run one
 * after another in this file and always restore the original pool.
 */
import pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { POST as claimRoute } from "@/app/api/v1/claims/route";
import { POST as batchRoute } from "@/app/api/v1/claims/batch/route";
import { GET as stateRoute } from "@/app/api/v1/claims/[source]/[eventId]/route";
import { claimEvent } from "@/lib/claims/claim";
import { closeDb } from "@/lib/db/client";
import { isUnavailable } from "@/lib/db/sql";
import { KeywardError } from "@/lib/errors";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { auditRows, getState, isErrorBody, keyRow, makeApiKey, post, type Called } from "@/test/setup/http";

const ORIGINAL_URL = process.env.DATABASE_URL!;
const ORIGINAL_TIMEOUT = process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS;

let key: string;
let keyName: string;
beforeAll(async () => {
  ({ key, name: keyName } = await makeApiKey(["claims:write"]));
});

afterEach(async () => {
  process.env.DATABASE_URL = ORIGINAL_URL;
  if (ORIGINAL_TIMEOUT === undefined) delete process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS;
  else process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = ORIGINAL_TIMEOUT;
  await closeDb();
});

function expect503(res: Called) {
  expect(res.status).toBe(503);
  expect(isErrorBody(res.body)).toBe(true);
  expect(res.body.error.code).toBe("database_unavailable");
  expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
}

/** A second connection that holds locks in an open transaction until `end()`. */
async function blocker() {
  const client = new pg.Client({ connectionString: ORIGINAL_URL });
  await client.connect();
  await client.query("BEGIN");
  return {
    query: (text: string, values: unknown[] = []) => client.query(text, values),
    end: async (how: "ROLLBACK" | "COMMIT" = "ROLLBACK") => {
      await client.query(how);
      await client.end();
    },
  };
}

describe("database unreachable", () => {
  it("the claim route answers 503 database_unavailable with Retry-After (the key check fails first)", async () => {
    const source = await makeSource();
    process.env.DATABASE_URL = "postgresql://postgres@127.0.0.1:1/x";
    await closeDb();
    const started = Date.now();
    const res = await post(claimRoute, { source, eventId: uniq("evt"), eventType: "t" }, { key });
    expect503(res);
    expect(res.body.error.message).not.toMatch(/127\.0\.0\.1|postgres@/); // nothing about the URL leaks
    expect(Date.now() - started).toBeLessThan(5000);

    // The other routes too, and the library throws the same typed error.
    expect503(await post(batchRoute, { source, events: [{ eventId: "a", eventType: "t" }] }, { key }));
    expect503(await getState(stateRoute, source, "a", key));
    const err = await claimEvent({ source, eventId: uniq("evt"), eventType: "t" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeywardError);
    expect(err).toMatchObject({ status: 503, code: "database_unavailable" });
  });

  it("recovers once the database is back (a fresh pool on the restored URL)", async () => {
    const source = await makeSource();
    process.env.DATABASE_URL = "postgresql://postgres@127.0.0.1:1/x";
    await closeDb();
    expect503(await post(claimRoute, { source, eventId: "e", eventType: "t" }, { key }));
    process.env.DATABASE_URL = ORIGINAL_URL;
    await closeDb();
    expect((await post(claimRoute, { source, eventId: "e", eventType: "t" }, { key })).status).toBe(201);
  });
});

describe("statement timeout", () => {
  it("a claim blocked on a locked (expired) key → 503 and no claim is recorded for it", async () => {
    const source = await makeSource(3600);
    const eventId = uniq("locked");
    await claimEvent({ source, eventId, eventType: "t" });
    await sql("UPDATE dedup_keys SET expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, eventId]);
    const before = (await keyRow(source, eventId))!;

    process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = "300";
    await closeDb();
    const lock = await blocker();
    try {
      await lock.query("SELECT * FROM dedup_keys WHERE source = $1 AND event_id = $2 FOR UPDATE", [source, eventId]);
      const started = Date.now();
      const res = await post(claimRoute, { source, eventId, eventType: "t" }, { key });
      expect503(res);
      expect(res.body.outcome).toBeUndefined();
      expect(Date.now() - started).toBeLessThan(3000);
      // The batch route takes the same path.
      expect503(await post(batchRoute, { source, events: [{ eventId, eventType: "t" }] }, { key }));
    } finally {
      await lock.end("ROLLBACK");
    }

    // Nothing from the timed-out requests committed: the key is untouched and no audit row names them.
    const after = (await keyRow(source, eventId))!;
    expect(after.claim_token).toBe(before.claim_token);
    expect(after.claim_kind).toBe("claimed");
    expect(after.expires_at.getTime()).toBe(before.expires_at.getTime());
    const audit = await auditRows(source, eventId);
    expect(audit.map((a) => a.kind)).toEqual(["claimed"]);
    expect(audit.filter((a) => a.actor === `apikey:${keyName}`)).toEqual([]);

    // With the lock gone, the same request goes through: the lock was the only obstacle.
    const ok = await post(claimRoute, { source, eventId, eventType: "t" }, { key });
    expect(ok.status).toBe(201);
    expect(ok.body.claimKind).toBe("reclaimed_after_expiry");
  });

  it("a claim racing an uncommitted insert of the same key → 503; after that insert rolls back there is no key and no audit row", async () => {
    const source = await makeSource(3600);
    const eventId = uniq("racing");
    process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = "300";
    await closeDb();
    const other = await blocker();
    try {
      await other.query(
        `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
         VALUES ($1, $2, 't', 'done', gen_random_uuid(), 'claimed', now() + interval '1 hour')`,
        [source, eventId],
      );
      expect503(await post(claimRoute, { source, eventId, eventType: "t" }, { key }));
    } finally {
      await other.end("ROLLBACK");
    }
    // The other transaction rolled back and ours timed out: no key, no audit row at all.
    expect(await keyRow(source, eventId)).toBeUndefined();
    expect(await auditRows(source, eventId)).toEqual([]);
    expect((await getState(stateRoute, source, eventId, key)).body.state).toBe("unknown");
  });
});

describe("isUnavailable", () => {
  it("classifies connection and timeout faults as unavailable, query mistakes as not", () => {
    for (const code of ["08006", "08001", "53300", "57P01", "57014", "ECONNREFUSED", "ETIMEDOUT"]) {
      expect(isUnavailable({ code }), code).toBe(true);
    }
    expect(isUnavailable(new Error("timeout exceeded when trying to connect"))).toBe(true);
    for (const code of ["23505", "42601", "22P02", "40001"]) expect(isUnavailable({ code }), code).toBe(false);
    expect(isUnavailable(new Error("boom"))).toBe(false);
    expect(isUnavailable(undefined)).toBe(false);
  });
});
