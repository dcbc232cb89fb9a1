/**
 * A private PgBouncer for tests: Debian's `pgbouncer` binary (1.18 here; `.ci/run` installs it), started
 * on a free port in TRANSACTION pooling mode in front of the test database server, with its own ini and
 * user list in a temporary directory, and stopped by its PID. The system's pgbouncer service is never
 * used. The pool is small (default 4 server connections per database) so that clients are multiplexed:
 * consecutive transactions of one client connection run on different server sessions, and anything a
 * client leaves in its session (a session advisory lock, a named prepared statement, a SET) is seen by
 * other clients or lost.
 *
 * The ini is the one docs/reliability.md recommends, apart from `auth_type = trust` (the test server
 * trusts local connections): `ignore_startup_parameters = statement_timeout` because 1.18 refuses a
 * startup parameter it does not track, and Keyward's pg pool sends the statement timeout that way (with
 * PgBouncer in front, set it on the role or the database instead: see lib/db/session-check.ts).
 */
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { reservePort } from "./server";

const BINARY = process.env.PGBOUNCER_BIN ?? "/usr/sbin/pgbouncer";
const START_TIMEOUT_MS = 15_000;

export type PgBouncerOptions = {
  /** Any URL of the PostgreSQL server to put PgBouncer in front of (host, port and user are taken from it). */
  serverUrl: string;
  /** Server connections per database and user (default 4). */
  poolSize?: number;
  /** Extra `[pgbouncer]` settings, e.g. `{ query_wait_timeout: "10" }`. */
  settings?: Record<string, string>;
};

export type PgBouncer = {
  port: number;
  pid: number;
  /** `url` (a URL of the same PostgreSQL server) with its host and port replaced by PgBouncer's. */
  through: (url: string) => string;
  /** Runs an admin console command (`SHOW POOLS`, `SHOW STATS`, …) and returns its rows. */
  admin: <Row = Record<string, unknown>>(command: string) => Promise<Row[]>;
  /** Everything PgBouncer logged so far (it logs to stderr). */
  output: () => string;
  stop: () => Promise<void>;
};

/** True when the pgbouncer binary is installed (the tests that need it say so when it is not). */
export function pgbouncerInstalled(): boolean {
  try {
    execFileSync(BINARY, ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

export async function startPgBouncer(o: PgBouncerOptions): Promise<PgBouncer> {
  const server = new URL(o.serverUrl);
  const user = decodeURIComponent(server.username || "postgres");
  const port = await reservePort();
  const dir = await mkdtemp(path.join(os.tmpdir(), "keyward-pgbouncer-"));
  // PgBouncer refuses to run as root: as root, it is told to switch to the postgres user, which must be
  // able to read its files.
  await chmod(dir, 0o755);
  const poolSize = o.poolSize ?? 4;
  const settings: Record<string, string> = {
    listen_addr: "127.0.0.1",
    listen_port: String(port),
    unix_socket_dir: "",
    auth_type: "trust",
    auth_file: path.join(dir, "userlist.txt"),
    admin_users: user,
    pool_mode: "transaction",
    default_pool_size: String(poolSize),
    max_db_connections: String(poolSize),
    reserve_pool_size: "0",
    max_client_conn: "500",
    // Keyward's pool sends statement_timeout as a startup parameter; 1.18 refuses unknown ones.
    ignore_startup_parameters: "statement_timeout",
    // A client waiting this long for a server connection gets an error instead of hanging the test.
    query_wait_timeout: "30",
    log_connections: "0",
    log_disconnections: "0",
    ...o.settings,
  };
  const ini = [
    "[databases]",
    `* = host=${server.hostname} port=${server.port || "5432"}`,
    "[pgbouncer]",
    ...Object.entries(settings).map(([k, v]) => `${k} = ${v}`),
    "",
  ].join("\n");
  await writeFile(path.join(dir, "pgbouncer.ini"), ini, { mode: 0o644 });
  await writeFile(settings.auth_file, `"${user}" ""\n`, { mode: 0o644 });

  const args = [path.join(dir, "pgbouncer.ini")];
  if (process.getuid?.() === 0) args.unshift("-u", "postgres");
  const child: ChildProcess = spawn(BINARY, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  // A test run that dies must not leave a PgBouncer behind.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);

  const stop = async () => {
    process.removeListener("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM"); // immediate shutdown
      const done = await Promise.race([exited, new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 5000))]);
      if (done === "timeout") {
        child.kill("SIGKILL");
        await exited;
      }
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`pgbouncer did not start within ${START_TIMEOUT_MS} ms:\n${out}`)), START_TIMEOUT_MS);
      const poll = setInterval(() => {
        if (out.includes("process up")) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve();
        }
      }, 20);
      void exited.then((code) => {
        clearInterval(poll);
        clearTimeout(timer);
        reject(new Error(`pgbouncer exited with ${code} before serving:\n${out}`));
      });
    });
  } catch (err) {
    await stop();
    throw err;
  }

  const through = (url: string) => {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(port);
    return u.toString();
  };

  const admin = async <Row,>(command: string): Promise<Row[]> => {
    const u = new URL(through(o.serverUrl));
    u.pathname = "/pgbouncer";
    const c = new pg.Client({ connectionString: u.toString() });
    await c.connect();
    try {
      return (await c.query(command)).rows as Row[]; // the admin console speaks the simple protocol only
    } finally {
      await c.end();
    }
  };

  return { port, pid: child.pid!, through, admin, output: () => out, stop };
}
