/** Spawning the real `keyward start` for end-to-end tests, and stopping it. */
import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const BIN = path.join(ROOT, "bin/keyward.cjs");
const START_TIMEOUT_MS = 60_000;

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

/** Spawns `keyward start --no-build` with `env` and resolves once it prints "console and API on". */
export function startKeyward(env: NodeJS.ProcessEnv, spawned: Server[] = []): Promise<Server> {
  const child = spawn(process.execPath, [BIN, "start", "--no-build"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const s: Server = { child, output: () => out, exited };
  spawned.push(s);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within ${START_TIMEOUT_MS} ms:\n${out}`)), START_TIMEOUT_MS);
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
