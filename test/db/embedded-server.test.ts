/**
 * The embedded database's wire server (lib/db/embedded-server.ts) on a real PGlite: every connection
 * gets the one PGlite session in whole protocol units and keeps it while it is not idle, so
 * connections never see each other's unnamed statements, half-finished pipelines or open transactions;
 * a connection that dies or idles inside a transaction is rolled back; excess connections are refused
 * with PostgreSQL's own error.
 */
import net from "node:net";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { EmbeddedServer } from "../../lib/db/embedded-server";

let db: PGlite;
let server: EmbeddedServer;
let url: string;
const MAX = 24;

beforeAll(async () => {
  db = await PGlite.create();
  server = new EmbeddedServer(db, { host: "127.0.0.1", port: 0, maxConnections: MAX, idleInTransactionMs: 1500 });
  url = `postgresql://postgres@127.0.0.1:${await server.start()}/postgres`;
  await db.exec("CREATE TABLE t (id int PRIMARY KEY, v text)");
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await db?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

// Raw frontend messages, to control exactly which bytes arrive when.
const cstr = (s: string) => Buffer.from(`${s}\0`);
function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0);
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}
const parse = (sql: string) => message("P", Buffer.concat([cstr(""), cstr(sql), Buffer.from([0, 0])]));
const bind = () => message("B", Buffer.concat([cstr(""), cstr(""), Buffer.from([0, 0, 0, 0, 0, 0])]));
const execute = () => message("E", Buffer.concat([cstr(""), Buffer.from([0, 0, 0, 0])]));
const sync = () => message("S", Buffer.alloc(0));

/** A raw connection past start-up; `received()` is everything the server sent since. */
async function raw(): Promise<{ socket: net.Socket; received: () => string; send: (b: Buffer) => void }> {
  const socket = net.connect(Number(new URL(url).port), "127.0.0.1");
  let data = "";
  socket.on("data", (d: Buffer) => (data += d.toString("latin1")));
  const body = Buffer.concat([Buffer.from([0, 3, 0, 0]), cstr("user"), cstr("postgres"), cstr("database"), cstr("postgres"), Buffer.from([0])]);
  const len = Buffer.alloc(4);
  len.writeInt32BE(body.length + 4);
  socket.write(Buffer.concat([len, body]));
  await vi.waitFor(() => expect(data).toContain("Z\0\0\0\x05I"), { timeout: 2000, interval: 20 }); // ReadyForQuery: started
  data = "";
  return { socket, received: () => data, send: (b) => socket.write(b) };
}

describe("EmbeddedServer", () => {
  it("runs a connection's Parse … Sync whole: another connection's Parse in between does not replace its statement", async () => {
    const a = await raw();
    const b = await raw();
    try {
      a.send(parse("SELECT 'from A' AS who")); // A's pipeline, cut after its Parse
      await sleep(100);
      b.send(Buffer.concat([parse("SELECT 'from B' AS who"), bind(), execute(), sync()]));
      await sleep(100);
      a.send(Buffer.concat([bind(), execute(), sync()]));
      await vi.waitFor(() => expect(a.received()).toContain("Z\0\0\0\x05I"), { timeout: 2000, interval: 20 });
      expect(a.received()).toContain("from A");
      expect(a.received()).not.toContain("from B");
      expect(b.received()).toContain("from B");
    } finally {
      a.socket.destroy();
      b.socket.destroy();
    }
  });

  it("many clients with different unnamed statements at once: every answer is its own", async () => {
    const pool = new pg.Pool({ connectionString: url, max: 16 });
    try {
      const wrong: string[] = [];
      const big = "x".repeat(100_000); // messages larger than one TCP segment arrive in pieces
      await Promise.all(
        Array.from({ length: 16 }, async (_, w) => {
          for (let i = 0; i < 40; i++) {
            const n = w * 1000 + i;
            const r =
              w % 2
                ? await pool.query<{ v: number; len: number }>("SELECT $1::int AS v, length($2) AS len", [n, big])
                : await pool.query<{ v: number; len: number }>("SELECT $1::int * 2 AS v, length($2) + 1 AS len", [n, "y"]);
            const want = w % 2 ? { v: n, len: big.length } : { v: 2 * n, len: 2 };
            if (r.rows[0].v !== want.v || r.rows[0].len !== want.len) wrong.push(`${w}/${i}`);
          }
        }),
      );
      expect(wrong).toEqual([]);
    } finally {
      await pool.end();
    }
  });

  it("a transaction keeps the session: another connection's statement waits for its COMMIT and sees only committed rows", async () => {
    const a = await client();
    const b = await client();
    try {
      await a.query("BEGIN");
      await a.query("INSERT INTO t VALUES (1, 'a')");
      let seen: number | undefined;
      const other = b.query<{ n: number }>("SELECT count(*)::int AS n FROM t").then((r) => (seen = r.rows[0].n));
      await sleep(200);
      expect(seen).toBeUndefined(); // waiting: PGlite runs one transaction at a time
      await a.query("INSERT INTO t VALUES (2, 'a')");
      await a.query("COMMIT");
      await other;
      expect(seen).toBe(2);
    } finally {
      await a.end();
      await b.end();
    }
  });

  it("a statement error inside a pipeline answers that client only; the session goes on", async () => {
    const a = await client();
    const b = await client();
    try {
      const [bad, good] = await Promise.allSettled([a.query("SELECT $1::int / 0 AS x", [1]), b.query("SELECT $1::int + 1 AS x", [1])]);
      expect(bad.status).toBe("rejected");
      expect((bad as PromiseRejectedResult).reason.code).toBe("22012");
      expect(good.status === "fulfilled" && good.value.rows[0].x).toBe(2);
      expect((await a.query("SELECT 5 AS x")).rows[0].x).toBe(5);
    } finally {
      await a.end();
      await b.end();
    }
  });

  it("a connection that dies inside a transaction is rolled back, and the others go on", async () => {
    const a = await client();
    a.on("error", () => {});
    const b = await client(); // connected first: a new connection's start-up waits for an open transaction too
    await a.query("BEGIN");
    await a.query("INSERT INTO t VALUES (10, 'doomed')");
    try {
      const waiting = b.query<{ n: number }>("SELECT count(*)::int AS n FROM t WHERE id = 10");
      await sleep(100);
      const t0 = performance.now();
      (a as unknown as { connection: { stream: net.Socket } }).connection.stream.destroy(); // killed, no ROLLBACK sent
      expect((await waiting).rows[0].n).toBe(0);
      expect(performance.now() - t0).toBeLessThan(1000); // at once, not after the idle-in-transaction limit
      expect(db.isInTransaction()).toBe(false);
      await b.query("INSERT INTO t VALUES (10, 'fine')");
    } finally {
      await b.end();
    }
  });

  it("a connection idle inside a transaction past the limit is ended and rolled back", async () => {
    const a = await client();
    a.on("error", () => {});
    const b = await client();
    await a.query("BEGIN");
    await a.query("INSERT INTO t VALUES (20, 'idle')");
    try {
      const t0 = performance.now();
      const r = await b.query<{ n: number }>("SELECT count(*)::int AS n FROM t WHERE id = 20");
      expect(r.rows[0].n).toBe(0);
      const waited = performance.now() - t0;
      expect(waited).toBeGreaterThan(1000);
      expect(waited).toBeLessThan(5000);
      await expect(a.query("SELECT 1")).rejects.toThrow();
    } finally {
      await b.end();
    }
  });

  it("refuses connections past its limit with PostgreSQL's error 53300", async () => {
    const clients: pg.Client[] = [];
    try {
      for (let i = 0; i < MAX; i++) clients.push(await client());
      const extra = new pg.Client({ connectionString: url });
      const err = await extra.connect().then(
        () => null,
        (e: unknown) => e as { code?: string; message: string },
      );
      expect(err?.code).toBe("53300");
      expect(err?.message).toMatch(/too many clients/);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    await sleep(100);
    const again = await client();
    expect((await again.query("SELECT 1 AS one")).rows[0].one).toBe(1);
    await again.end();
  });
});
