/** Spawning the real `keyward start` for end-to-end tests, and stopping it. */
import { spawn, type ChildProcess } from "node:child_process";
import { randomInt } from "node:crypto";
import net from "node:net";
import path from "node:path";
import { expect, vi } from "vitest";

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const BIN = path.join(ROOT, "bin/keyward.cjs");
// Generous: on a loaded shared machine (load average above 20) a start has taken over a minute.
const START_TIMEOUT_MS = 180_000;

export type Server = { child: ChildProcess; output: () => string; exited: Promise<number | null>; baseUrl: string };

/**
 * Ports for children that must bind a port chosen beforehand (a PostgreSQL, Redis or PgBouncer of a test's
 * own, a server restarted on the same address). They are drawn at random from 16000–31999, below the kernel's
 * ephemeral range (32768+), so no port handed out by `listen(0)` or to an outgoing connection can take one
 * between the check and the child's bind, and two concurrent files (workers are numbered per project and per
 * process, so no fixed block per worker is safe) meet on one only by a 1-in-16,000 chance. A port found bound
 * is skipped. A server that need not keep its port listens on port 0 instead (startKeyward with PORT "0").
 */
const PORT_LOW = 16_000;
const PORT_HIGH = 32_000;
export async function reservePort(): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = PORT_LOW + randomInt(PORT_HIGH - PORT_LOW);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${PORT_LOW}–${PORT_HIGH - 1}`);
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** process.env without what must not leak into a child server (vitest's NODE_ENV, the test's timeouts, the shell's HOSTNAME). */
export function baseEnv(drop: string[] = []): NodeJS.ProcessEnv {
  const skip = new Set(["NODE_ENV", "KEYWARD_DB_STATEMENT_TIMEOUT_MS", "PORT", "HOSTNAME", ...drop]);
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !skip.has(k))) as NodeJS.ProcessEnv;
}

/**
 * Spawns `keyward start --no-build` (or `keyward demo`) with `env` and resolves once it prints "console and API on <url>", with that
 * URL (PORT defaults to "0": the server binds a port of the kernel's choosing and reports it). The server runs
 * in production mode, so it is told to check every answer against its declared response schema
 * (KEYWARD_CHECK_RESPONSES=1, lib/http/route.ts): an answer its route does not declare is a 500, and the test
 * that got it fails. `env` may turn it off (`KEYWARD_CHECK_RESPONSES: "0"`), as a benchmark would.
 */
export function startKeyward(env: NodeJS.ProcessEnv, spawned: Server[] = [], timeoutMs = START_TIMEOUT_MS, command: "start" | "demo" = "start"): Promise<Server> {
  const child = spawn(process.execPath, [BIN, command, "--no-build"], {
    cwd: ROOT,
    env: { KEYWARD_CHECK_RESPONSES: "1", PORT: "0", HOSTNAME: "127.0.0.1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const s: Server = { child, output: () => out, exited, baseUrl: "" };
  spawned.push(s);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (d: Buffer) => {
      out += d.toString();
      // The whole line: a chunk may end inside the URL.
      const serving = /console and API on (http:\/\/\S+)\r?\n/.exec(out);
      if (serving && !s.baseUrl) {
        s.baseUrl = serving[1];
        clearTimeout(timer);
        resolve(s);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`keyward start exited with ${code} before serving:\n${out}`));
    });
  });
}

/** SIGTERM, and the exit code once it has exited; a server still running 15 s later is killed (SIGKILL: null). */
export async function stopServer(s: Server | undefined): Promise<number | null> {
  if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return s?.child.exitCode ?? null;
  s.child.kill("SIGTERM");
  const kill = setTimeout(() => s.child.kill("SIGKILL"), 15_000);
  try {
    return await s.exited;
  } finally {
    clearTimeout(kill);
  }
}

/**
 * Stops an embedded PostgreSQL still running in `dataDir` (a server that had to be killed leaves it
 * running, detached), so a test never leaves a postgres process behind its deleted data directory.
 */
export async function stopEmbeddedPostgres(dataDir: string | undefined): Promise<void> {
  if (!dataDir) return;
  const { embeddedStatus } = await import("@/lib/db/embedded");
  const { pid } = embeddedStatus(dataDir);
  if (!pid) return;
  try {
    process.kill(pid, "SIGINT");
  } catch {
    return;
  }
  // Not this process's child: no exit event, so its pid is watched until it is gone (15 s, then SIGKILL).
  const gone = await vi
    .waitFor(() => expect(alive(pid)).toBe(false), { timeout: 15_000, interval: 50 })
    .then(() => true, () => false);
  if (gone) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // It ended meanwhile.
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
