/**
 * The embedded PostgreSQL (PGlite: PostgreSQL in WebAssembly), used when DATABASE_URL is not set.
 *
 * PGlite's data directory can be open in one process only, so whoever opens it (the server or a CLI
 * command) also serves it on 127.0.0.1 (embedded-server.ts) and records its pid and port in
 * `<dataDir>/owner.json`. Another process finding a live owner connects to that port instead of opening
 * the files: the CLI works whether or not the server is running, and everything speaks the same
 * PostgreSQL wire protocol (one code path for the app).
 */
import "server-only";
import { link, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { EmbeddedServer } from "./embedded-server";

export type EmbeddedOwner = { pid: number; port: number | null };

export type DatabaseHandle = {
  url: string;
  /** Human description printed at start ("embedded PostgreSQL in ./.keyward …" or the masked URL). */
  description: string;
  /** Closes what this process opened (the embedded engine if it owns it). */
  close(): Promise<void>;
};

const OWNER_FILE = "owner.json";
/** Data directories this process serves, so a second open in the same process shares the engine. */
const ownedHere = new Map<string, { url: string; description: string }>();
const opening = new Map<string, Promise<unknown>>();
const WAIT_FOR_OWNER_MS = 30_000;
/** Rounds of acquireEmbedded at most: the 200 ms waits that fit in WAIT_FOR_OWNER_MS, and 50 stale files more. */
const MAX_OWNER_ROUNDS = WAIT_FOR_OWNER_MS / 200 + 50;
/** Connections the owner accepts: the server's pool, a few CLI commands' pools and the migrator's. */
const MAX_CONNECTIONS = 100;

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.setTimeout(1000);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

function parseOwner(text: string): EmbeddedOwner | null {
  try {
    const o = JSON.parse(text) as EmbeddedOwner;
    return typeof o?.pid === "number" ? o : null;
  } catch {
    return null;
  }
}

const urlFor = (port: number) => `postgresql://postgres@127.0.0.1:${port}/postgres`;

/**
 * Opens the embedded database in `dir`: connects to the live owner's port if another process serves it,
 * otherwise becomes the owner (opening PGlite and listening on `port`, 0 = any free port).
 */
export function openEmbedded(dir: string, port = 0): Promise<DatabaseHandle> {
  // Concurrent opens in one process take turns, so the second one finds the first as the owner.
  const previous = opening.get(dir) ?? Promise.resolve();
  const attempt = previous.catch(() => {}).then(() => acquireEmbedded(dir, port));
  opening.set(dir, attempt.catch(() => {}));
  return attempt;
}

async function acquireEmbedded(dir: string, port: number): Promise<DatabaseHandle> {
  await mkdir(dir, { recursive: true });
  const ownerFile = path.join(dir, OWNER_FILE);
  const deadline = Date.now() + WAIT_FOR_OWNER_MS;
  // Bounded: a round returns, throws, waits 200 ms for an owner that is starting (until the deadline), or
  // removes a stale owner file; an owner file that keeps turning stale is an error, not a reason to spin.
  for (let round = 0; round < MAX_OWNER_ROUNDS; round++) {
    // Written aside, then linked into place: owner.json appears atomically and already filled in, and
    // link() fails if it exists, so exactly one process becomes the owner.
    const draft = `${ownerFile}.${process.pid}.tmp`;
    await writeFile(draft, JSON.stringify({ pid: process.pid, port: null } satisfies EmbeddedOwner));
    let won = false;
    try {
      await link(draft, ownerFile);
      won = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    } finally {
      await rm(draft, { force: true });
    }
    if (won) {
      try {
        return await serveEmbedded(dir, port, ownerFile);
      } catch (err) {
        await rm(ownerFile, { force: true });
        throw err;
      }
    }

    const seen = await readFile(ownerFile, "utf8").catch(() => "");
    const owner = parseOwner(seen);
    const ours = ownedHere.get(dir);
    if (owner && owner.pid === process.pid && ours) return { ...ours, close: async () => {} };
    const live = owner !== null && owner.pid !== process.pid && pidAlive(owner.pid);
    if (live && owner.port && (await portOpen(owner.port))) {
      return {
        url: urlFor(owner.port),
        description: `embedded PostgreSQL in ${dir}, served by process ${owner.pid} on 127.0.0.1:${owner.port}`,
        close: async () => {},
      };
    }
    const starting = (live && owner.port === null) || (owner === null && seen !== "");
    if (starting && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200)); // the owner writes its port once it listens
      continue;
    }
    if (starting && live) {
      throw new Error(`the embedded database in ${dir} is held by process ${owner.pid}, which does not answer`);
    }
    // Stale: its process is gone, or a reused pid that does not serve the recorded port. Remove it only
    // if it is still the file we judged, not one another process has just written.
    if ((await readFile(ownerFile, "utf8").catch(() => "")) === seen) await rm(ownerFile, { force: true });
  }
  throw new Error(`cannot open the embedded database in ${dir}: its ${OWNER_FILE} keeps changing (another process starting it and failing?)`);
}

async function serveEmbedded(dir: string, port: number, ownerFile: string): Promise<DatabaseHandle> {
  const { PGlite } = await import("@electric-sql/pglite");
  const dataDir = path.join(dir, "pgdata");
  const db = await PGlite.create({ dataDir });
  const server = new EmbeddedServer(db, { host: "127.0.0.1", port, maxConnections: MAX_CONNECTIONS });
  const actualPort = await server.start();
  await writeFile(ownerFile, JSON.stringify({ pid: process.pid, port: actualPort } satisfies EmbeddedOwner));
  let closed = false;
  const served = { url: urlFor(actualPort), description: `embedded PostgreSQL (PGlite) in ${dataDir}, listening on 127.0.0.1:${actualPort}` };
  ownedHere.set(dir, served);
  return {
    ...served,
    close: async () => {
      if (closed) return;
      closed = true;
      ownedHere.delete(dir);
      await server.stop();
      await db.close();
      await rm(ownerFile, { force: true });
    },
  };
}
