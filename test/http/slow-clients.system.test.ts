/**
 * Slow clients against the real server with small configured bounds (KEYWARD_HTTP_*_TIMEOUT_MS): headers
 * sent byte by byte, a body trickled in, and an idle keep-alive connection are each cut within their
 * bound (plus Node's sweep interval and scheduling slack), while an ordinary request is unaffected.
 * Also: the bounds are validated at start-up.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadEnv } from "@/lib/config/env";
import { httpServerOptions } from "@/lib/server/start";
import { createApiKey } from "@/lib/auth/api-keys";
import { cliPrincipal } from "@/lib/auth/principal";
import { makeSource, uniq } from "@/test/setup/db";
import { stopServer, type Server } from "@/test/setup/server";
import { startTestServer } from "@/test/setup/auth";

const HEADERS_MS = 1000;
const REQUEST_MS = 2000;
const KEEP_ALIVE_MS = 1000;
/** Node checks header and request timeouts on a sweep (here every 500 ms); then scheduling on a busy machine. */
const SLACK_MS = 1500;

const spawned: Server[] = [];
let port: number;
let key: string;
let source: string;

beforeAll(async () => {
  const { baseUrl } = await startTestServer(spawned, {
    KEYWARD_HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
    KEYWARD_HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
    KEYWARD_HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
  });
  port = Number(new URL(baseUrl).port);
  key = (await createApiKey({ name: uniq("slow"), scopes: ["claims:write"] }, cliPrincipal())).key;
  source = await makeSource();
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

/** Times from the first byte sent: to the first byte answered, and to the close. */
type Outcome = { elapsedMs: number; answeredMs: number | null; response: string; closedByServer: boolean };

/**
 * Writes `head` at once, then `drip` one character every `everyMs`, until the server closes the socket
 * (or the drip runs out, and `giveUpMs` passes). Time is measured from the first byte sent.
 */
function slowClient(head: string, drip: string, everyMs: number, giveUpMs: number): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let response = "";
    let started = 0;
    let answeredMs: number | null = null;
    let timer: NodeJS.Timeout | undefined;
    let i = 0;
    const done = (closedByServer: boolean) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ elapsedMs: Date.now() - started, answeredMs, response, closedByServer });
    };
    const giveUp = setTimeout(() => done(false), giveUpMs);
    socket.on("data", (d) => {
      answeredMs ??= Date.now() - started;
      response += d.toString();
    });
    socket.on("close", () => done(true));
    socket.on("error", (err) => ((err as NodeJS.ErrnoException).code === "ECONNRESET" ? done(true) : reject(err)));
    socket.on("connect", () => {
      started = Date.now();
      socket.write(head);
      timer = setInterval(() => {
        if (i < drip.length && !socket.destroyed) socket.write(drip[i++]);
      }, everyMs);
    });
  });
}

describe("slow clients", () => {
  it("headers sent byte by byte: 408 and the connection closed once the header timeout passes", async () => {
    const o = await slowClient("GET /api/v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\n", `X-Slow: ${"a".repeat(400)}`, 50, 20_000);
    expect(o.closedByServer).toBe(true);
    expect(o.elapsedMs).toBeGreaterThanOrEqual(HEADERS_MS - 100);
    expect(o.elapsedMs).toBeLessThan(HEADERS_MS + SLACK_MS);
    expect(o.response).toMatch(/^HTTP\/1\.1 408/);
  });

  it("a body trickled in (to an authenticated claim, which reads it): closed once the request timeout passes", async () => {
    const body = JSON.stringify({ source, eventId: uniq("slow"), eventType: "t", pad: "x".repeat(400) });
    const head =
      `POST /api/v1/claims HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const o = await slowClient(head, body, 50, 20_000);
    expect(o.closedByServer).toBe(true);
    // Nothing was answered before the bound: the server waited for the body, then gave up on it.
    expect(o.elapsedMs).toBeGreaterThanOrEqual(REQUEST_MS - 100);
    expect(o.elapsedMs).toBeLessThan(REQUEST_MS + SLACK_MS);
    expect(o.answeredMs === null || o.answeredMs >= REQUEST_MS - 100).toBe(true);
    expect(o.response).not.toMatch(/^HTTP\/1\.1 2/);
  });

  it("an idle keep-alive connection is closed after the keep-alive timeout", async () => {
    const o = await slowClient("GET /api/v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n", "", 1000, 20_000);
    expect(o.response).toMatch(/^HTTP\/1\.1 200/);
    expect(o.closedByServer).toBe(true);
    const idleMs = o.elapsedMs - o.answeredMs!;
    expect(idleMs).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 100);
    expect(idleMs).toBeLessThan(KEEP_ALIVE_MS + SLACK_MS);
  });

  it("an ordinary request is unaffected", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/session`);
    expect(res.status).toBe(200);
    expect((await res.json()).user).toBeNull();
  });
});

/** The configuration from these variables alone. */
const envOf = (vars: Record<string, string>) => loadEnv(vars as NodeJS.ProcessEnv & Record<string, string>);

describe("configuration", () => {
  it("defaults: headers 10 s, request 30 s, keep-alive 5 s", () => {
    expect(httpServerOptions(envOf({}))).toMatchObject({ headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000 });
  });

  it("refuses a header timeout longer than the request timeout, or a bound that is not a number, naming the variable", () => {
    expect(() => envOf({ KEYWARD_HTTP_HEADERS_TIMEOUT_MS: "60000", KEYWARD_HTTP_REQUEST_TIMEOUT_MS: "30000" })).toThrow(
      /KEYWARD_HTTP_HEADERS_TIMEOUT_MS: must not exceed KEYWARD_HTTP_REQUEST_TIMEOUT_MS/,
    );
    expect(() => envOf({ KEYWARD_HTTP_REQUEST_TIMEOUT_MS: "soon" })).toThrow(ConfigError);
    expect(() => envOf({ KEYWARD_HTTP_KEEP_ALIVE_TIMEOUT_MS: "0" })).toThrow(/KEYWARD_HTTP_KEEP_ALIVE_TIMEOUT_MS/);
  });
});
