/**
 * Ownership of the embedded database's data directory (lib/db/embedded.ts): one process serves it,
 * a second open in the same process shares it, and a stale owner.json never locks a user out.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openEmbedded, type DatabaseHandle } from "../../lib/db/embedded";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "keyward-owner-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function selectOne(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<{ one: number }>("SELECT 1 AS one")).rows[0].one;
  } finally {
    await c.end();
  }
}

describe("openEmbedded", () => {
  it("replaces a stale owner.json (dead pid, or a live pid not serving its port) and shares within a process", async () => {
    const ownerFile = path.join(dir, "owner.json");
    // A pid that cannot exist, then this test runner's parent pid with a port nobody listens on.
    for (const stale of [{ pid: 2 ** 22 + 1, port: 1 }, { pid: process.ppid, port: 1 }]) {
      await writeFile(ownerFile, JSON.stringify(stale));
      const handle: DatabaseHandle = await openEmbedded(dir);
      try {
        const owner = JSON.parse(await readFile(ownerFile, "utf8")) as { pid: number; port: number };
        expect(owner.pid).toBe(process.pid);
        expect(handle.url).toBe(`postgresql://postgres@127.0.0.1:${owner.port}/postgres`);
        expect(await selectOne(handle.url)).toBe(1);

        const again = await openEmbedded(dir);
        expect(again.url).toBe(handle.url);
        await again.close(); // a shared handle does not stop the engine
        expect(await selectOne(handle.url)).toBe(1);
      } finally {
        await handle.close();
      }
      await expect(readFile(ownerFile, "utf8")).rejects.toThrow(/ENOENT/);
    }
  }, 60_000);

  it("two concurrent opens in one process share one engine", async () => {
    const [a, b] = await Promise.all([openEmbedded(dir), openEmbedded(dir)]);
    try {
      expect(b.url).toBe(a.url);
      expect(await selectOne(a.url)).toBe(1);
    } finally {
      await b.close();
      await a.close();
    }
  }, 60_000);
});
