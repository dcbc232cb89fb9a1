/**
 * A private PostgreSQL primary and a streaming replica of it, for the read-replica tests: `initdb` on a free
 * port, then `pg_basebackup -R` (a standby that streams the primary's WAL) started on another. The machine's
 * own server (5432) is never touched; both servers run as the `postgres` OS user when the tests run as root
 * (PostgreSQL refuses root), and are stopped by their PIDs. Uses the newest /usr/lib/postgresql/<n>/bin.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chownSync, mkdtempSync, openSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { vi } from "vitest";
import { reservePort } from "./server";

export type PgServer = { port: number; pid: number; url: (database?: string) => string; stop: () => Promise<void> };

const BIN = (() => {
  const versions = readdirSync("/usr/lib/postgresql").sort((a, b) => Number(b) - Number(a));
  return path.join("/usr/lib/postgresql", versions[0], "bin");
})();

/** Run as `postgres` when root (uid/gid for child processes), else as whoever runs the tests. */
function owner(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
  return { uid, gid };
}

/** Resolves once the server at `url` answers a query; fails with the last connection error after `timeoutMs`. */
async function untilAccepting(url: string, timeoutMs = 30_000): Promise<void> {
  await vi.waitFor(
    async () => {
      const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
      try {
        await c.connect();
        await c.query("SELECT 1");
      } finally {
        await c.end().catch(() => {});
      }
    },
    { timeout: timeoutMs, interval: 200 },
  );
}

function startServer(dataDir: string, socketDir: string, port: number, log: string, extra: string[]): ChildProcess {
  const out = openSync(log, "a");
  return spawn(
    path.join(BIN, "postgres"),
    ["-D", dataDir, "-p", String(port), "-k", socketDir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
     "-c", "shared_buffers=16MB", "-c", "max_connections=40", ...extra],
    { ...owner(), stdio: ["ignore", out, out] },
  );
}

function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    process.kill(child.pid!, "SIGINT"); // fast shutdown
    const timer = setTimeout(() => child.exitCode === null && process.kill(child.pid!, "SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };
}

export type PrimaryAndReplica = { primary: PgServer; replica: PgServer; dir: string; close: () => Promise<void> };

export async function startPrimaryAndReplica(): Promise<PrimaryAndReplica> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "keyward-replica-"));
  const who = owner();
  if (who.uid !== undefined) chownSync(dir, who.uid, who.gid!);
  const primaryDir = path.join(dir, "primary");
  const replicaDir = path.join(dir, "replica");
  execFileSync(path.join(BIN, "initdb"), ["-D", primaryDir, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"], {
    ...who,
    stdio: "ignore",
  });
  const [pPort, rPort] = [await reservePort(), await reservePort()];
  const url = (port: number) => (database = "postgres") => `postgresql://postgres@127.0.0.1:${port}/${database}`;
  const primaryChild = startServer(primaryDir, dir, pPort, path.join(dir, "primary.log"), ["-c", "wal_level=replica", "-c", "max_wal_senders=4"]);
  const primary: PgServer = { port: pPort, pid: primaryChild.pid!, url: url(pPort), stop: stopper(primaryChild) };
  let replica: PgServer | undefined;
  const close = async () => {
    await replica?.stop();
    await primary.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await untilAccepting(primary.url());
    execFileSync(
      path.join(BIN, "pg_basebackup"),
      ["-h", "127.0.0.1", "-p", String(pPort), "-U", "postgres", "-D", replicaDir, "-R", "-X", "stream", "--no-sync"],
      { ...who, stdio: "ignore" },
    );
    const replicaChild = startServer(replicaDir, dir, rPort, path.join(dir, "replica.log"), ["-c", "hot_standby=on"]);
    replica = { port: rPort, pid: replicaChild.pid!, url: url(rPort), stop: stopper(replicaChild) };
    await untilAccepting(replica.url());
    return { primary, replica, dir, close };
  } catch (err) {
    await close();
    throw err;
  }
}
