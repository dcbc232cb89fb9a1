/**
 * Private redis-server processes for tests: each on a free port of 127.0.0.1, keeping nothing on disk unless
 * asked, in a temporary directory of its own, stopped by its PID (never by name). A Sentinel is the same
 * binary with `--sentinel`; a Cluster is six of them joined by `redis-cli --cluster create`.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Redis from "ioredis";
import { vi } from "vitest";
import { reservePort } from "./server";

const run = promisify(execFile);

export type RedisProcess = {
  port: number;
  /** A command to this server (a fresh connection per call: works across restarts). */
  cmd: (...args: (string | number)[]) => Promise<unknown>;
  /** SIGKILL: gone at once, whatever it held (no persistence: a restart starts empty). */
  kill: () => Promise<void>;
  /** Starts it again on the same port with the same arguments. */
  restart: () => Promise<void>;
  stop: () => Promise<void>;
  pid: () => number | undefined;
};

const all = new Set<RedisProcess>();

/**
 * Resolves once the server on `port` answers PING; fails at once if `proc` exits first (a port taken), with the
 * end of its log.
 */
async function waitForPing(port: number, proc: ChildProcess, log: string): Promise<void> {
  const exited = new Promise<never>((_, reject) =>
    proc.once("exit", (code, signal) => {
      const tail = existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").slice(-5).join("\n") : "(no log)";
      reject(new Error(`redis-server on ${port} exited (${signal ?? code}) before it answered:\n${tail}`));
    }),
  );
  const answered = vi.waitFor(
    async () => {
      const probe = new Redis({ port, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
      probe.on("error", () => {});
      try {
        await probe.connect();
        await probe.ping();
      } finally {
        probe.disconnect();
      }
    },
    { timeout: 10_000, interval: 25 },
  );
  // Whichever loses the race settles later, unheard.
  for (const p of [answered, exited]) p.catch(() => {});
  await Promise.race([answered, exited]);
}

/** One-off command to 127.0.0.1:port. */
export async function redisCmd(port: number, ...args: (string | number)[]): Promise<unknown> {
  const c = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000, commandTimeout: 5000 });
  c.on("error", () => {});
  try {
    return await c.call(String(args[0]), ...args.slice(1).map(String));
  } finally {
    c.disconnect();
  }
}

/** Starts `redis-server` (or `redis-server --sentinel` with `sentinelConf`) with extra arguments. */
export async function startRedis(o: { args?: string[]; port?: number; sentinelConf?: string } = {}): Promise<RedisProcess> {
  const port = o.port ?? (await reservePort());
  const dir = mkdtempSync(path.join(tmpdir(), "kw-redis-"));
  const log = path.join(dir, "redis.log");
  let proc: ChildProcess | undefined;
  const spawnIt = async () => {
    let argv: string[];
    if (o.sentinelConf !== undefined) {
      const conf = path.join(dir, "sentinel.conf");
      writeFileSync(conf, `port ${port}\nbind 127.0.0.1\ndir ${dir}\nlogfile ${log}\n${o.sentinelConf}\n`);
      argv = [conf, "--sentinel"];
    } else {
      argv = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", log, ...(o.args ?? [])];
    }
    proc = spawn("redis-server", argv, { stdio: "ignore" });
    await waitForPing(port, proc, log);
  };
  const kill = async () => {
    const p = proc;
    proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGKILL"); // by its PID: this test's own redis-server
    await exited;
  };
  const r: RedisProcess = {
    port,
    cmd: (...args) => redisCmd(port, ...args),
    kill,
    restart: spawnIt,
    stop: async () => {
      await kill();
      all.delete(r);
      rmSync(dir, { recursive: true, force: true });
    },
    pid: () => proc?.pid,
  };
  all.add(r);
  await spawnIt();
  return r;
}

/** Stops every redis-server this process started (afterAll). */
export async function stopAllRedis(): Promise<void> {
  await Promise.all([...all].map((r) => r.stop()));
}

/** Waits until a replica's link to its primary is up and it has caught up with `primary`'s offset. */
export async function waitForReplica(replica: RedisProcess): Promise<void> {
  await vi.waitFor(
    async () => {
      const info = String(await replica.cmd("INFO", "replication"));
      if (!/master_link_status:up/.test(info) || /master_sync_in_progress:1/.test(info)) throw new Error(`replica on ${replica.port} never synced`);
    },
    { timeout: 15_000, interval: 25 },
  );
}

/**
 * A 3-primary Cluster with one replica each, on private ports. Resolves once every node says cluster_state:ok.
 * Each node's bus port is reserved too: by default it is the port + 10000, outside this worker's block and
 * possibly in the kernel's ephemeral range, where an outgoing connection may hold it.
 */
export async function startCluster(): Promise<{ nodes: RedisProcess[]; url: string }> {
  const nodes = await Promise.all(
    Array.from({ length: 6 }, async () => {
      const bus = await reservePort();
      return startRedis({ args: ["--cluster-enabled", "yes", "--cluster-port", String(bus), "--cluster-node-timeout", "2000", "--cluster-config-file", "nodes.conf"] });
    }),
  );
  await run("redis-cli", ["--cluster", "create", ...nodes.map((n) => `127.0.0.1:${n.port}`), "--cluster-replicas", "1", "--cluster-yes"], { timeout: 30_000 });
  await vi.waitFor(
    async () => {
      const states = await Promise.all(nodes.map((n) => n.cmd("CLUSTER", "INFO").then(String)));
      if (!states.every((s) => /cluster_state:ok/.test(s))) throw new Error("the Cluster never said cluster_state:ok on every node");
      const slots = await Promise.all(nodes.map((n) => n.cmd("CLUSTER", "SLOTS")));
      if (!slots.every((s) => Array.isArray(s) && s.length === 3)) throw new Error(`not every node sees 3 primaries' slots: ${JSON.stringify(slots.map((s) => (Array.isArray(s) ? s.length : s)))}`);
    },
    { timeout: 30_000, interval: 50 },
  );
  return { nodes, url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}` };
}

/** INFO field of a server, as a string. */
export async function infoField(r: RedisProcess, section: string, field: string): Promise<string | undefined> {
  const info = String(await r.cmd("INFO", section));
  return new RegExp(`^${field}:(.*)$`, "m").exec(info)?.[1]?.trim();
}
