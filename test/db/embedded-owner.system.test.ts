/**
 * Sharing and recovering the embedded PostgreSQL's data directory (lib/db/embedded.ts), against real
 * PostgreSQL servers started from the bundled binaries: two opens in one process share one server and the
 * last close stops it; a process killed with -9 leaves a server and a registration behind, which the next
 * open recovers from; a lock file of a dead process, and a postmaster.pid naming a live process that is not
 * PostgreSQL (a reused pid), never lock a user out.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { embeddedStatus, openEmbedded } from "@/lib/db/embedded";

const ROOT = path.resolve(import.meta.dirname, "../..");
let dir: string;
const quiet = { log: () => {} };

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "keyward-owner-"));
});
afterAll(async () => {
  const { pid } = embeddedStatus(dir);
  if (pid) process.kill(pid, "SIGINT");
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("openEmbedded", () => {
  it("two opens in one process share one server; the last close stops it", async () => {
    const [a, b] = await Promise.all([openEmbedded(dir, quiet), openEmbedded(dir, quiet)]);
    expect(a.url).toBe(b.url);
    expect(a.url).toMatch(/^postgresql:\/\/keyward:[0-9a-f]{48}@127\.0\.0\.1:\d+\/keyward$/);
    expect(await selectOne(a.url)).toBe(1);
    const { pid } = embeddedStatus(dir);
    expect(pid).toBeGreaterThan(0);
    await a.close();
    expect(await selectOne(b.url)).toBe(1); // still served for the other open
    await b.close();
    // The server was started by this process but runs detached (no exit event here): its pid is watched.
    await vi.waitFor(() => expect(alive(pid!), `postgres ${pid} still running after the last close`).toBe(false), { timeout: 10_000, interval: 50 });
    expect(await readdir(path.join(dir, "users"))).toEqual([]);
    expect(existsSync(path.join(dir, "lock"))).toBe(false);
  }, 60_000);

  it("after a user killed with -9, the next open stops the orphaned server and starts afresh", async () => {
    // A separate process opens the data directory and is killed without closing it.
    const script = `require("./bin/outside-next.cjs"); require("tsx/cjs/api").register();
      require("./lib/db/embedded.ts").openEmbedded(${JSON.stringify(dir)}, { log() {} }).then(() => console.log("open"));
      setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ["-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => d.toString().includes("open") && resolve());
      child.once("exit", (code) => reject(new Error(`child exited with ${code}`)));
    });
    const orphan = embeddedStatus(dir).pid!;
    expect(orphan).toBeGreaterThan(0);
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    expect(embeddedStatus(dir).pid).toBe(orphan); // still running, registered to a dead process

    const said: string[] = [];
    const h = await openEmbedded(dir, { log: (m) => said.push(m) });
    expect(said.join("\n")).toContain(`stopping the embedded PostgreSQL (pid ${orphan}) left running`);
    expect(await selectOne(h.url)).toBe(1);
    expect(embeddedStatus(dir).pid).not.toBe(orphan);
    expect(await readdir(path.join(dir, "users"))).toEqual([String(process.pid)]);
    await h.close();
  }, 90_000);

  it("a lock file of a dead process and a postmaster.pid naming a live non-PostgreSQL process do not block", async () => {
    await writeFile(path.join(dir, "lock"), "999999"); // no such process
    // After a crash and a reboot the recorded pid may belong to another program: here, this test's process.
    const cluster = path.join(dir, "postgres");
    const lines = ["", dir, String(Date.now() / 1000), "54321", "", "127.0.0.1", "  1 2", "ready   "];
    lines[0] = String(process.pid);
    await writeFile(path.join(cluster, "postmaster.pid"), lines.join("\n") + "\n");
    const h = await openEmbedded(dir, quiet);
    expect(await selectOne(h.url)).toBe(1);
    expect(Number((await readFile(path.join(cluster, "postmaster.pid"), "utf8")).split("\n")[0])).not.toBe(process.pid);
    await h.close();
  }, 60_000);
});
