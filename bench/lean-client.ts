/**
 * A lean keep-alive HTTP/1.1 client for the HTTP scenarios: one TCP connection per benchmark client,
 * requests written as one buffer, answers parsed just enough (status line, Content-Length, the JSON body).
 *
 * Why not node:http: on this 2-core machine the load generator shares the cores with the server and
 * PostgreSQL, and node:http's client costs about as much CPU per request as the server's claim handler,
 * so it measured the client as much as the server. The raw-pg baseline's client (pg) is lean; this puts
 * the HTTP scenarios on the same footing. Same interface as JsonClient (http-client.ts).
 */
import net from "node:net";
import type { JsonResponse } from "./http-client";

const IDLE_SOCKET_MS = 4000;

type Pending = { resolve: (r: JsonResponse) => void; reject: (e: Error) => void };

class Connection {
  private socket: net.Socket | undefined;
  private buffered: Buffer = Buffer.alloc(0);
  private pending: Pending | undefined;
  private lastUsed = 0;

  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  private open(): net.Socket {
    const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    const fail = (err: Error) => {
      if (this.socket === socket) this.socket = undefined;
      this.buffered = Buffer.alloc(0);
      const p = this.pending;
      this.pending = undefined;
      p?.reject(err);
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("connection closed")));
    this.socket = socket;
    return socket;
  }

  send(request: Buffer): Promise<JsonResponse> {
    // The server closes keep-alive connections idle for 5 s: never reuse one idle for 4 s (as JsonClient).
    if (this.socket && performance.now() - this.lastUsed > IDLE_SOCKET_MS) this.drop();
    this.lastUsed = performance.now();
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      (this.socket ?? this.open()).write(request);
    });
  }

  private onData(chunk: Buffer): void {
    this.buffered = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
    const end = this.buffered.indexOf("\r\n\r\n");
    if (end < 0) return;
    const head = this.buffered.toString("latin1", 0, end);
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? NaN);
    if (!Number.isFinite(length)) return this.failAll(new Error(`no content-length in answer: ${head.slice(0, 200)}`));
    if (this.buffered.length < end + 4 + length) return;
    const status = Number(head.slice(9, 12));
    const text = this.buffered.toString("utf8", end + 4, end + 4 + length);
    this.buffered = this.buffered.subarray(end + 4 + length);
    const close = /\r\nconnection:\s*close/i.test(head);
    const p = this.pending;
    this.pending = undefined;
    this.lastUsed = performance.now();
    if (close) this.drop();
    try {
      p?.resolve({ status, body: text ? JSON.parse(text) : undefined });
    } catch (err) {
      p?.reject(new Error(`HTTP ${status}: unparsable body ${text.slice(0, 200)} (${(err as Error).message})`));
    }
  }

  /** Forgets the current socket at once (its close event must not fail the next request). */
  private drop(): void {
    const old = this.socket;
    this.socket = undefined;
    this.buffered = Buffer.alloc(0);
    if (!old) return;
    old.removeAllListeners("close");
    old.removeAllListeners("data");
    old.on("error", () => {});
    old.destroy();
  }

  private failAll(err: Error): void {
    this.socket?.destroy(err);
  }

  close(): void {
    this.socket?.destroy();
  }
}

export class LeanJsonClient {
  private readonly idle: Connection[] = [];
  private readonly all: Connection[] = [];
  private readonly host: string;
  private readonly port: number;
  private readonly headerText: string;

  constructor(baseUrl: string, clients: number, headers: Record<string, string>) {
    const url = new URL(baseUrl);
    this.host = url.hostname;
    this.port = Number(url.port);
    this.headerText = Object.entries({ host: url.host, ...headers, "content-type": "application/json" })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("");
    for (let i = 0; i < clients; i++) {
      const c = new Connection(this.host, this.port);
      this.all.push(c);
      this.idle.push(c);
    }
  }

  async post(path: string, body: string): Promise<JsonResponse> {
    const c = this.idle.pop() ?? new Connection(this.host, this.port);
    const payload = Buffer.from(body);
    const request = Buffer.concat([
      Buffer.from(`POST ${path} HTTP/1.1\r\n${this.headerText}content-length: ${payload.length}\r\n\r\n`, "latin1"),
      payload,
    ]);
    try {
      return await c.send(request);
    } finally {
      if (this.all.includes(c)) this.idle.push(c);
    }
  }

  close(): void {
    for (const c of this.all) c.close();
  }
}
