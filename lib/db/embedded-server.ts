/**
 * Serves one PGlite database to many TCP connections on loopback, speaking the PostgreSQL wire protocol
 * (what pglite-socket does, with the two guarantees below that it lacks; docs/architecture.md, "The
 * embedded database").
 *
 * PGlite is one PostgreSQL backend: one session for every connection. A connection therefore gets the
 * session in whole protocol units and keeps it for as long as the session is not idle:
 *
 * - A unit is every message up to and including a Sync, a simple Query, a Flush or the end of a COPY
 *   (CopyDone / CopyFail). pglite-socket passes messages on one at a time, so the Parse of one connection
 *   could land between the Parse and the Bind of another, which then ran the other's statement (the
 *   unnamed statement and portal are the session's, not the connection's). A unit goes to PGlite whole.
 * - After a unit the connection keeps the session until PGlite's output ends with ReadyForQuery
 *   "idle": inside a transaction block (BEGIN … COMMIT over several round trips), in a COPY, or between a
 *   Flush and its Sync, no other connection's unit runs. Other units wait in arrival order.
 * - A connection that goes away while it holds the session has its work undone (CopyFail, Sync, and
 *   ROLLBACK if a transaction is still open) before the next unit runs; one that holds an open
 *   transaction idle for IDLE_IN_TRANSACTION_MS is ended the same way (PostgreSQL's
 *   idle_in_transaction_session_timeout, which PGlite cannot enforce: it has no timers).
 * - Start-up parameters (statement_timeout, application_name, …) are accepted and have no effect: the
 *   session was started once, with PGlite's own settings.
 */
import "server-only";
import net from "node:net";
import type { PGlite } from "@electric-sql/pglite";

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;

/** Frontend messages that end a unit: Sync, Query, Flush, CopyDone, CopyFail. */
const UNIT_END = new Set(["S", "Q", "H", "c", "f"].map((c) => c.charCodeAt(0)));
const TERMINATE = "X".charCodeAt(0);
const READY_FOR_QUERY = "Z".charCodeAt(0);
const IDLE = "I".charCodeAt(0);

/** How long a connection may hold the session inside an open transaction without sending anything. */
export const IDLE_IN_TRANSACTION_MS = 60_000;
const MAX_MESSAGE_BYTES = 1 << 30;

/** Follows the framing of the backend's output to one connection, to see whether it ended idle. */
class OutputTracker {
  private header: number[] = [];
  private remaining = 0;
  private type = 0;
  private status = 0;

  feed(chunk: Uint8Array): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.remaining === 0) {
        this.header.push(chunk[i++]);
        if (this.header.length === 5) {
          const [t, a, b, c, d] = this.header;
          this.type = t;
          this.remaining = ((a << 24) | (b << 16) | (c << 8) | d) - 4;
          this.status = 0;
          this.header = [];
        }
      } else {
        const n = Math.min(this.remaining, chunk.length - i);
        if (this.type === READY_FOR_QUERY) this.status = chunk[i + n - 1];
        i += n;
        this.remaining -= n;
      }
    }
  }

  /** True when the last complete message was ReadyForQuery with status idle (no transaction block). */
  get idle(): boolean {
    return this.remaining === 0 && this.header.length === 0 && this.type === READY_FOR_QUERY && this.status === IDLE;
  }
}

type Connection = {
  id: number;
  socket: net.Socket;
  input: Buffer;
  started: boolean;
  /** Messages of the unit being received. */
  pending: Buffer[];
  output: OutputTracker;
  closed: boolean;
  idleTimer?: NodeJS.Timeout;
};

/** A unit to run for a connection, or the undoing of what a connection that went away left open. */
type Job = { conn: Connection; unit: Buffer } | { reset: Connection };
const ownerOf = (job: Job) => ("reset" in job ? job.reset : job.conn);

/** A FATAL ErrorResponse (the client reports it, then the socket is closed). */
function fatal(code: string, message: string): Buffer {
  const fields = Buffer.concat(
    [["S", "FATAL"], ["V", "FATAL"], ["C", code], ["M", message]].map(([k, v]) => Buffer.from(`${k}${v}\0`)).concat(Buffer.from([0])),
  );
  const head = Buffer.alloc(5);
  head.write("E", 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

const COPY_FAIL_AND_SYNC = Buffer.concat([
  Buffer.from("f"),
  Buffer.from([0, 0, 0, 4 + "connection closed\0".length]),
  Buffer.from("connection closed\0"),
  Buffer.from([0x53, 0, 0, 0, 4]), // Sync
]);
const ROLLBACK = Buffer.concat([Buffer.from([0x51, 0, 0, 0, 4 + "ROLLBACK\0".length]), Buffer.from("ROLLBACK\0")]);

export class EmbeddedServer {
  private server: net.Server | undefined;
  private readonly connections = new Set<Connection>();
  /** Every open socket, refused and ending ones included, so stop() can close them all. */
  private readonly sockets = new Set<net.Socket>();
  private queue: Job[] = [];
  /** The connection whose unit left the session not idle: only its units run until it is idle again. */
  private owner: Connection | null = null;
  private pumping: Promise<void> | null = null;
  /** The connection whose unit is in PGlite right now. */
  private running: Connection | null = null;
  private nextId = 1;

  constructor(
    private readonly db: PGlite,
    private readonly options: { host: string; port: number; maxConnections: number; idleInTransactionMs?: number },
  ) {}

  /** Listens; resolves with the port. */
  async start(): Promise<number> {
    await this.db.waitReady;
    const server = net.createServer((socket) => this.accept(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.port, this.options.host, () => resolve());
    });
    return (server.address() as net.AddressInfo).port;
  }

  /** Stops accepting, ends every connection, and waits for the unit in progress (the caller then closes PGlite). */
  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    for (const conn of this.connections) this.drop(conn);
    for (const socket of this.sockets) socket.destroy();
    while (this.pumping) await this.pumping;
    await closed;
  }

  private accept(socket: net.Socket): void {
    socket.setNoDelay(true);
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    if (this.connections.size >= this.options.maxConnections) {
      socket.end(fatal("53300", "sorry, too many clients already"));
      setTimeout(() => socket.destroy(), 1000).unref();
      return;
    }
    const conn: Connection = { id: this.nextId++, socket, input: Buffer.alloc(0), started: false, pending: [], output: new OutputTracker(), closed: false };
    this.connections.add(conn);
    socket.on("data", (data) => this.receive(conn, data));
    socket.on("error", () => this.drop(conn));
    socket.on("close", () => this.drop(conn));
  }

  private receive(conn: Connection, data: Buffer): void {
    if (conn.closed) return;
    if (this.owner === conn) this.watchIdle(conn); // it is active: the idle time starts again
    conn.input = conn.input.length ? Buffer.concat([conn.input, data]) : data;
    for (;;) {
      const input = conn.input;
      if (!conn.started) {
        // Untyped start-up packets: length, then a code.
        if (input.length < 8) return;
        const length = input.readInt32BE(0);
        if (length < 8 || length > 10_000) return this.refuse(conn, "08P01", "invalid start-up packet");
        if (input.length < length) return;
        const code = input.readInt32BE(4);
        conn.input = input.subarray(length);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          conn.socket.write("N"); // no encryption on loopback; the client goes on in plain text
        } else if (code === CANCEL_REQUEST) {
          return this.drop(conn); // nothing to cancel: a statement runs to its end in PGlite
        } else if (code === PROTOCOL_3) {
          conn.started = true;
          this.submit(conn, Buffer.from(input.subarray(0, length)));
        } else {
          return this.refuse(conn, "08P01", `unsupported frontend protocol ${code >>> 16}.${code & 0xffff}`);
        }
        continue;
      }
      if (input.length < 5) return;
      const length = input.readInt32BE(1);
      if (length < 4 || length > MAX_MESSAGE_BYTES) return this.refuse(conn, "08P01", "invalid message length");
      if (input.length < length + 1) return;
      const type = input[0];
      const message = Buffer.from(input.subarray(0, length + 1));
      conn.input = input.subarray(length + 1);
      if (type === TERMINATE) return this.drop(conn);
      conn.pending.push(message);
      if (UNIT_END.has(type)) {
        const unit = conn.pending.length === 1 ? conn.pending[0] : Buffer.concat(conn.pending);
        conn.pending = [];
        this.submit(conn, unit);
      }
    }
  }

  /** Answers a protocol violation with a FATAL error and ends the connection. */
  private refuse(conn: Connection, code: string, message: string): void {
    conn.socket.end(fatal(code, message));
    this.drop(conn, { flush: true });
  }

  private submit(conn: Connection, unit: Buffer): void {
    this.queue.push({ conn, unit });
    this.pump();
  }

  /** Runs queued units one at a time: the owner's first while there is an owner, else in arrival order. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = (async () => {
      for (;;) {
        const at = this.owner ? this.queue.findIndex((j) => ownerOf(j) === this.owner) : 0;
        if (at < 0 || this.queue.length === 0) break; // the owner has sent nothing yet: wait for it
        const [job] = this.queue.splice(at, 1);
        await this.run(job);
      }
    })().finally(() => {
      this.pumping = null;
      // A unit may have arrived, or the owner changed, after the loop looked for the last time.
      if (this.queue.length && (!this.owner || this.queue.some((j) => ownerOf(j) === this.owner))) this.pump();
    });
  }

  private async run(job: Job): Promise<void> {
    if ("reset" in job) return this.reset();
    const { conn, unit } = job;
    if (conn.closed) return;
    clearTimeout(conn.idleTimer);
    this.running = conn;
    let failed = false;
    try {
      await this.db.runExclusive(() =>
        this.db.execProtocolRawStream(unit, {
          onRawData: (data) => {
            conn.output.feed(data);
            if (!conn.closed) conn.socket.write(Buffer.from(data));
          },
        }),
      );
    } catch (err) {
      // Not a database error (those are answers to the client): the engine itself failed on this unit.
      console.error(`[keyward] embedded database: a statement of connection ${conn.id} failed in the engine: ${(err as Error).message}`);
      failed = true;
    } finally {
      this.running = null;
    }
    if (failed) this.drop(conn);
    if (conn.closed) {
      // It went away while its unit ran (or the engine failed): nobody is left to finish what it opened.
      if (failed || !conn.output.idle) await this.reset();
      else if (this.owner === conn) this.owner = null;
      return;
    }
    if (conn.output.idle) {
      if (this.owner === conn) this.owner = null;
      return;
    }
    this.owner = conn;
    this.watchIdle(conn);
  }

  /** Held inside a transaction (or a COPY, or between Flush and Sync): ended if it sends nothing for long. */
  private watchIdle(conn: Connection): void {
    clearTimeout(conn.idleTimer);
    conn.idleTimer = setTimeout(() => {
      if (this.owner !== conn || this.running === conn || this.queue.some((j) => ownerOf(j) === conn)) return;
      conn.socket.end(fatal("25P03", "terminating connection due to idle-in-transaction timeout"));
      this.drop(conn, { flush: true });
    }, this.options.idleInTransactionMs ?? IDLE_IN_TRANSACTION_MS);
    conn.idleTimer.unref();
  }

  /** Ends a connection: its queued units are dropped; if it holds the session, its work is undone next. */
  private drop(conn: Connection, { flush = false } = {}): void {
    this.connections.delete(conn);
    if (conn.closed) return;
    conn.closed = true;
    clearTimeout(conn.idleTimer);
    this.queue = this.queue.filter((j) => ownerOf(j) !== conn);
    if (!flush) conn.socket.destroy();
    else setTimeout(() => conn.socket.destroy(), 1000).unref(); // socket.end() sends the error first
    // A unit of it still running is followed up by run() itself.
    if (this.owner === conn && this.running !== conn) {
      this.queue.unshift({ reset: conn });
      this.pump();
    }
  }

  /** Brings the session back to idle after its owner went away: out of a COPY, past a pending Sync, rolled back. */
  private async reset(): Promise<void> {
    try {
      await this.db.runExclusive(async () => {
        await this.db.execProtocolRawStream(COPY_FAIL_AND_SYNC, { onRawData: () => {} });
        if (this.db.isInTransaction()) await this.db.execProtocolRawStream(ROLLBACK, { onRawData: () => {} });
      });
    } catch (err) {
      console.error(`[keyward] embedded database: could not reset the session: ${(err as Error).message}`);
    } finally {
      this.owner = null;
    }
  }
}
