/** Spawning the real `keyward start` for end-to-end tests, and stopping it. */
import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const BIN = path.join(ROOT, "bin/keyward.cjs");
// Generous: on a loaded shared machine (load average above 20) a start has taken over a minute.
const START_TIMEOUT_MS = 180_000;

export type Server = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
}

/** process.env without what must not leak into a child server (vitest's NODE_ENV, the test's timeouts). */
export function baseEnv(drop: string[] = []): NodeJS.ProcessEnv {
  const skip = new Set(["NODE_ENV", "KEYWARD_DB_STATEMENT_TIMEOUT_MS", ...drop]);
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !skip.has(k))) as NodeJS.ProcessEnv;
}

/**
 * Spawns `keyward start --no-build` with `env` and resolves once it prints "console and API on". The server
 * runs in production mode, so it is told to check every answer against its declared response schema
 * (KEYWARD_CHECK_RESPONSES=1, lib/http/route.ts): an answer its route does not declare is a 500, and the
 * test that got it fails. `env` may turn it off (`KEYWARD_CHECK_RESPONSES: "0"`), as a benchmark would.
 */
export function startKeyward(env: NodeJS.ProcessEnv, spawned: Server[] = [], timeoutMs = START_TIMEOUT_MS): Promise<Server> {
  const child = spawn(process.execPath, [BIN, "start", "--no-build"], {
    cwd: ROOT,
    env: { KEYWARD_CHECK_RESPONSES: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const s: Server = { child, output: () => out, exited };
  spawned.push(s);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const poll = setInterval(() => {
      if (out.includes("console and API on")) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve(s);
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`keyward start exited with ${code} before serving:\n${out}`));
    });
  });
}

export async function stopServer(s: Server | undefined): Promise<number | null> {
  if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return s?.child.exitCode ?? null;
  s.child.kill("SIGTERM");
  const code = await Promise.race([s.exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 15_000))]);
  if (code === "timeout") {
    s.child.kill("SIGKILL");
    return s.exited;
  }
  return code;
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
  for (let i = 0; i < 300; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  process.kill(pid, "SIGKILL");
}
