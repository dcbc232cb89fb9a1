/**
 * The real server for the HTTP scenarios: `node bin/keyward.cjs start --no-build` against the benchmark
 * database on a free port, exactly as an operator starts it. `stop()` is safe to call at any time and
 * more than once; a synchronous kill on process exit covers the paths that never reach it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { buildIfNeeded } from "@/lib/server/build";
import net from "node:net";
import path from "node:path";

const ROOT = path.resolve(__dirname, "..");
const READY = /console and API on (http:\/\/\S+)/;
const START_TIMEOUT_MS = 90_000;

export type RunningServer = { baseUrl: string; pid: number; command: string; stop: () => Promise<void> };

const CLI = ["bin/keyward.cjs", "start", "--no-build"];

/** Starts the server with the CLI, as an operator does. */
export function startServer(databaseUrl: string, env: Record<string, string> = {}): Promise<RunningServer> {
  return launch(CLI, { DATABASE_URL: databaseUrl, ...env });
}

/** Starts the server on the embedded database in `dataDir` (no DATABASE_URL), as `npm start` does. */
export function startEmbeddedServer(dataDir: string): Promise<RunningServer> {
  return launch(CLI, { DATABASE_URL: undefined, KEYWARD_DATA_DIR: dataDir });
}

class ExitedEarly extends Error {
  constructor(readonly output: string) {
    super(`server exited before it was ready; server output:\n${output}`);
  }
}

export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve, reject) => srv.once("error", reject).listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return port;
}

/** Builds when there is no build or a source file is newer (the check `keyward start` makes). */
export function ensureBuild(): void {
  buildIfNeeded();
}

async function launch(args: string[], database: Record<string, string | undefined>): Promise<RunningServer> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, ...database, PORT: String(port), HOSTNAME: "127.0.0.1" };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  // Its own process group, so stop() also reaches anything the server spawned.
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, args[0]), ...args.slice(1)], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const pid = child.pid!;
  const log: string[] = [];
  const keep = (chunk: Buffer) => {
    log.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    if (log.length > 200) log.splice(0, log.length - 200);
  };
  child.stderr!.on("data", keep);

  let exited = false;
  const exitedPromise = new Promise<void>((resolve) => child.once("close", () => ((exited = true), resolve())));
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal);
    } catch {
      /* already gone */
    }
  };
  const onExit = () => killGroup("SIGKILL");
  process.once("exit", onExit);

  const stop = async () => {
    process.removeListener("exit", onExit);
    if (exited) return;
    killGroup("SIGTERM");
    const timer = setTimeout(() => killGroup("SIGKILL"), 5000);
    await exitedPromise;
    clearTimeout(timer);
  };

  try {
    const baseUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server not ready after ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
      let buffered = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        keep(chunk);
        buffered += chunk.toString("utf8");
        const m = READY.exec(buffered);
        if (m) {
          clearTimeout(timer);
          buffered = "";
          resolve(m[1]);
        }
      });
      void exitedPromise.then(() => {
        clearTimeout(timer);
        reject(new ExitedEarly(log.join("\n")));
      });
    });
    return { baseUrl, pid, command: `node ${args.join(" ")}`, stop };
  } catch (err) {
    await stop();
    if (err instanceof ExitedEarly) throw err;
    throw new Error(`${(err as Error).message}; server output:\n${log.join("\n")}`, { cause: err });
  }
}
