/**
 * lib/replay/deliver.ts against real local HTTP servers (node:http): signing (with the Standard Webhooks
 * spec's published test vector and the standardwebhooks verifier), the headers sent, the outcome
 * classification per status, timeout, abort, redirects refused, the response-body cap; the backoff
 * schedule; the rate limiter on a virtual clock (exact counts, no wall-clock assertions).
 */
import { createHash, createHmac } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliverOnce, encodeEventIdHeader, signWebhook, webhookIdFor, USER_AGENT } from "@/lib/replay/deliver";
import { backoffCeilingMs, backoffMs, DEFAULT_SCHEDULE, scheduleSpanMs } from "@/lib/replay/backoff";
import { retryOrGiveUp } from "@/lib/replay/attempts";
import { RateLimiter, type LimiterClock } from "@/lib/replay/rate-limiter";
import { reservePort } from "@/test/setup/server";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

type Seen = { method: string; url: string; headers: http.IncomingHttpHeaders; body: string; rawBody: Buffer };
type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void;

/** A real HTTP server whose behaviour per path is set by the test; it records every request. */
class TestServer {
  seen: Seen[] = [];
  routes = new Map<string, Handler>();
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const rawBody = Buffer.concat(chunks);
      const body = rawBody.toString();
      this.seen.push({ method: req.method!, url: req.url!, headers: req.headers, body, rawBody });
      const h = this.routes.get(req.url!.split("?")[0]);
      if (h) h(req, res, body);
      else res.writeHead(404).end("no such route");
    });
  });
  url = "";
  async start() {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async stop() {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
  on(path: string, h: Handler) {
    this.routes.set(path, h);
    return `${this.url}${path}`;
  }
  hits(path: string) {
    return this.seen.filter((s) => s.url === path).length;
  }
}

const dest = new TestServer();
const other = new TestServer();
beforeAll(async () => {
  await dest.start();
  await other.start();
});
afterAll(async () => {
  await dest.stop();
  await other.stop();
});

const send = (url: string, o: Partial<Parameters<typeof deliverOnce>[0]> = {}) =>
  deliverOnce({ url, id: "evt_1", body: '{"a":1}', secret: SECRET, replayId: "rp_1", ...o });

describe("signWebhook", () => {
  it("matches the Standard Webhooks spec's published test vector", () => {
    const h = signWebhook({
      id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
      timestamp: new Date(1614265330 * 1000),
      body: '{"test": 2432232314}',
      secret: SECRET,
    });
    expect(h).toEqual({
      "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
      "webhook-timestamp": "1614265330",
      "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    });
  });

  it("verifies with the standardwebhooks verifier, and not with another secret or body", () => {
    const body = JSON.stringify({ hello: "wörld" });
    const h = signWebhook({ id: "evt_9", timestamp: new Date(), body, secret: SECRET });
    expect(new Webhook(SECRET).verify(body, h)).toEqual({ hello: "wörld" });
    expect(() => new Webhook("whsec_" + Buffer.from("another key").toString("base64")).verify(body, h)).toThrow(/signature/i);
    expect(() => new Webhook(SECRET).verify(body + " ", h)).toThrow(/signature/i);
  });

  it("signs the body's bytes as they are: equal to the package's signature for UTF-8, and exact for bytes that are not UTF-8", () => {
    const ts = new Date();
    const utf8 = '{"name":"Zoë 東京 🎉","id":820982911946154508}';
    expect(signWebhook({ id: "evt_1", timestamp: ts, body: Buffer.from(utf8), secret: SECRET })["webhook-signature"]).toBe(
      new Webhook(SECRET).sign("evt_1", ts, utf8),
    );
    const latin1 = Buffer.from("name=Zo\xeb", "latin1");
    const h = signWebhook({ id: "evt_1", timestamp: ts, body: latin1, secret: SECRET });
    const key = Buffer.from(SECRET.slice(6), "base64");
    const expected = createHmac("sha256", key).update(Buffer.concat([Buffer.from(`evt_1.${h["webhook-timestamp"]}.`), latin1])).digest("base64");
    expect(h["webhook-signature"]).toBe(`v1,${expected}`);
    // The package would have signed the U+FFFD-replaced string instead: another signature.
    expect(h["webhook-signature"]).not.toBe(new Webhook(SECRET).sign("evt_1", ts, latin1));
  });

  it("refuses a webhook-id that is not a header-safe token (callers map event ids with webhookIdFor)", () => {
    for (const id of ["évt_café", "事件_1", "a.b", "a b", ""]) {
      expect(() => signWebhook({ id, timestamp: new Date(), body: "{}", secret: SECRET })).toThrow(/webhook-id/);
    }
  });

  it("refuses a secret that is not whsec_<base64>", () => {
    for (const secret of ["", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!"]) {
      expect(() => signWebhook({ id: "e", timestamp: new Date(), body: "{}", secret })).toThrow(/whsec_/);
    }
  });
});

describe("webhookIdFor", () => {
  it("passes a plain token through; maps anything else to a stable kw_ id of 25 ASCII characters", () => {
    for (const id of ["evt_1NJ8xY2eZvKYlo2C", "msg_p5jXN8AQM9LWM0D4loKWxJek", "5f0c7b5e-7c2b-4b5e-9c1a-0d3c8f1e2a3b", "820982911946154508", "a~b|c!d#e$f%g&h'i*j+k^l`m"]) {
      expect(webhookIdFor(id)).toBe(id);
    }
    const mapped = ["事件_1", "🎉party", "évt_café", "order.created.1", "evt 1", "a/b", "a:b", "x".repeat(256), 'q"uote'];
    const ids = mapped.map(webhookIdFor);
    for (const w of ids) expect(w).toMatch(/^kw_[A-Za-z0-9_-]{22}$/);
    expect(new Set(ids).size).toBe(mapped.length);
    // Stable: the same event id maps to the same webhook-id every time (the receiver's dedup key).
    expect(webhookIdFor("事件_1")).toBe(ids[0]);
    const digest = createHash("sha256").update("事件_1", "utf8").digest().subarray(0, 16).toString("base64url");
    expect(ids[0]).toBe(`kw_${digest}`);
  });

  it("keyward-event-id carries the original id as percent-encoded UTF-8", () => {
    for (const id of ["事件_1", "🎉party", "évt_café", "order.created.1", "evt 1", "evt_plain"]) {
      const header = encodeEventIdHeader(id);
      expect(header).toMatch(/^[\x21-\x7e]+$/);
      expect(decodeURIComponent(header)).toBe(id);
    }
    expect(encodeEventIdHeader("évt_café")).toBe("%C3%A9vt_caf%C3%A9");
  });
});

describe("deliverOnce", () => {
  it("sends the stored bytes with their content type; a non-plain event id goes out as its kw_ id, signed as sent", async () => {
    const url = dest.on("/form", (_q, res) => res.writeHead(204).end());
    const body = Buffer.from("text=caf%C3%A9&n=820982911946154508&raw=\xe9", "latin1");
    const r = await send(url, { id: "évt_café.1", body, contentType: "application/x-www-form-urlencoded; charset=utf-8" });
    expect(r.ok).toBe(true);
    const req = dest.seen.filter((s) => s.url === "/form").at(-1)!;
    expect(req.headers["content-type"]).toBe("application/x-www-form-urlencoded; charset=utf-8");
    expect(req.headers["webhook-id"]).toBe(webhookIdFor("évt_café.1"));
    expect(req.headers["keyward-event-id"]).toBe("%C3%A9vt_caf%C3%A9.1");
    expect(Buffer.from(req.rawBody).equals(body)).toBe(true);
    const key = Buffer.from(SECRET.slice(6), "base64");
    const signed = Buffer.concat([Buffer.from(`${req.headers["webhook-id"]}.${req.headers["webhook-timestamp"]}.`), body]);
    expect(req.headers["webhook-signature"]).toBe(`v1,${createHmac("sha256", key).update(signed).digest("base64")}`);
  });

  it("POSTs the body byte for byte with verifiable signature and the Keyward headers", async () => {
    const url = dest.on("/ok", (_q, res) => res.writeHead(200).end("thanks"));
    const body = JSON.stringify({ order: 42, note: "é ✓" });
    const r = await send(url, { id: "evt_sig", body, replayId: "rp_42" });
    expect(r).toEqual({ ok: true, status: 200, error: null, retryable: false });
    const req = dest.seen.filter((s) => s.url === "/ok").at(-1)!;
    expect(req.method).toBe("POST");
    expect(req.body).toBe(body);
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["user-agent"]).toBe(USER_AGENT);
    expect(req.headers["user-agent"]).toMatch(/Keyward/);
    expect(req.headers["keyward-replay-id"]).toBe("rp_42");
    expect(req.headers["webhook-id"]).toBe("evt_sig");
    expect(req.headers["webhook-timestamp"]).toMatch(/^\d+$/);
    const headers = {
      "webhook-id": req.headers["webhook-id"] as string,
      "webhook-timestamp": req.headers["webhook-timestamp"] as string,
      "webhook-signature": req.headers["webhook-signature"] as string,
    };
    expect(new Webhook(SECRET).verify(req.body, headers)).toEqual({ order: 42, note: "é ✓" });
  });

  it.each([
    [200, true, false],
    [201, true, false],
    [204, true, false],
    [408, false, true],
    [429, false, true],
    [500, false, true],
    [502, false, true],
    [503, false, true],
    [504, false, true],
    [400, false, false],
    [401, false, false],
    [403, false, false],
    [404, false, false],
    [409, false, false],
    [410, false, false],
    [422, false, false],
  ])("status %i → ok %s, retryable %s", async (status, ok, retryable) => {
    const url = dest.on(`/status-${status}`, (_q, res) => res.writeHead(status).end(status === 204 ? undefined : `answer ${status}`));
    const r = await send(url);
    expect(r.ok).toBe(ok);
    expect(r.status).toBe(status);
    expect(r.retryable).toBe(retryable);
    if (ok) expect(r.error).toBeNull();
    else expect(r.error).toBe(`HTTP ${status} ${http.STATUS_CODES[status]}: answer ${status}`);
  });

  it("a connection refused is a retryable failure with a readable error", async () => {
    const port = await reservePort();
    const r = await send(`http://127.0.0.1:${port}/x`);
    expect(r).toEqual({ ok: false, status: null, error: `connection refused by 127.0.0.1:${port}`, retryable: true });
  });

  it("a destination that never answers times out (retryable)", async () => {
    const url = dest.on("/hang", () => undefined);
    const r = await send(url, { timeoutMs: 200 });
    expect(r).toEqual({ ok: false, status: null, error: "no response within 200 ms", retryable: true });
  });

  it("the timeout also covers a body that never ends", async () => {
    const url = dest.on("/slow-body", (_q, res) => {
      res.writeHead(500);
      res.write("partial");
    });
    const r = await send(url, { timeoutMs: 200 });
    expect(r).toMatchObject({ ok: false, status: null, error: "no response within 200 ms", retryable: true });
  });

  it("the caller's signal aborts a pending request; an aborted signal sends nothing", async () => {
    const url = dest.on("/hang-abort", () => undefined);
    const ac = new AbortController();
    const pending = send(url, { signal: ac.signal, timeoutMs: 60_000 });
    await expect.poll(() => dest.hits("/hang-abort"), { timeout: 5000, interval: 5 }).toBeGreaterThan(0);
    ac.abort();
    expect(await pending).toEqual({ ok: false, status: null, error: "aborted", retryable: true });

    const url2 = dest.on("/never", (_q, res) => res.writeHead(200).end());
    const r = await send(url2, { signal: AbortSignal.abort() });
    expect(r).toEqual({ ok: false, status: null, error: "aborted", retryable: true });
    expect(dest.hits("/never")).toBe(0);
  });

  it("never follows a redirect, to another origin or the same one", async () => {
    const target = other.on("/landing", (_q, res) => res.writeHead(200).end());
    const url = dest.on("/moved", (_q, res) => res.writeHead(307, { location: target }).end());
    const r = await send(url);
    expect(r.ok).toBe(false);
    expect(r.status).toBe(307);
    expect(r.retryable).toBe(false);
    expect(r.error).toBe(`HTTP 307 Temporary Redirect: redirect to ${target} not followed; set the replay destination to the final URL`);
    expect(other.hits("/landing")).toBe(0);

    const same = dest.on("/relative", (_q, res) => res.writeHead(301, { location: "/ok" }).end());
    const before = dest.hits("/ok");
    const r2 = await send(same);
    expect(r2).toMatchObject({ ok: false, status: 301, retryable: false });
    expect(r2.error).toContain(`redirect to ${dest.url}/ok not followed`);
    expect(dest.hits("/ok")).toBe(before);
  });

  it("reads only the start of a huge error body (an endless body still ends the delivery)", async () => {
    const url = dest.on("/endless", (_q, res) => {
      res.writeHead(503, { "content-type": "text/plain" });
      const chunk = "x".repeat(64 * 1024);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    });
    const r = await send(url, { timeoutMs: 20_000 });
    expect(r.ok).toBe(false);
    expect(r.status).toBe(503);
    expect(r.retryable).toBe(true);
    expect(r.error).toMatch(/^HTTP 503 Service Unavailable: x+…$/);
    expect(r.error!.length).toBeLessThanOrEqual(300);
  });

  it("a bad destination URL or secret fails without sending, not retryable", async () => {
    expect(await send("not a url")).toEqual({
      ok: false,
      status: null,
      error: "destination is not a valid URL: not a url",
      retryable: false,
    });
    expect(await send("ftp://127.0.0.1/x")).toMatchObject({ ok: false, status: null, retryable: false });
    const url = dest.on("/badsecret", (_q, res) => res.writeHead(200).end());
    expect(await send(url, { secret: "plain-secret" })).toEqual({
      ok: false,
      status: null,
      error: "signing secret must be whsec_ followed by base64",
      retryable: false,
    });
    expect(dest.hits("/badsecret")).toBe(0);
  });
});

describe("backoffMs", () => {
  it("has a bounded exponential ceiling: 1 s, 2 s, 4 s, 8 s, 16 s, then 16 s (the legacy schedule)", () => {
    expect([1, 2, 3, 4, 5, 6, 50].map((n) => backoffCeilingMs(n))).toEqual([1000, 2000, 4000, 8000, 16000, 16000, 16000]);
    expect(() => backoffCeilingMs(Number.NaN)).toThrow(RangeError);
  });

  it("the default schedule spans hours: 10 s doubling to 1 h over 12 attempts", () => {
    expect([1, 2, 3, 9, 10, 11, 200].map((n) => backoffCeilingMs(n, DEFAULT_SCHEDULE))).toEqual([10_000, 20_000, 40_000, 2_560_000, 3_600_000, 3_600_000, 3_600_000]);
    expect(scheduleSpanMs(DEFAULT_SCHEDULE)).toBe(12_310_000); // 3 h 25 min 10 s of ceilings
    expect(scheduleSpanMs({ maxAttempts: 1, initialDelayMs: 5, maxDelayMs: 5 })).toBe(0);
  });

  it("is equal jitter: uniform in [ceiling/2, ceiling), deterministic with an injected random", () => {
    expect(backoffMs(1, () => 0)).toBe(500);
    expect(backoffMs(3, () => 0.5)).toBe(3000);
    expect(backoffMs(5, () => 0.999999)).toBe(15999);
    expect(backoffMs(2, () => 0, DEFAULT_SCHEDULE)).toBe(10_000);
    for (let attempt = 1; attempt <= 5; attempt++) {
      for (let i = 0; i < 200; i++) {
        const d = backoffMs(attempt);
        expect(d).toBeGreaterThanOrEqual(backoffCeilingMs(attempt) / 2);
        expect(d).toBeLessThan(backoffCeilingMs(attempt));
      }
    }
  });
});

describe("retryOrGiveUp (a retry never comes after the key expires)", () => {
  const now = new Date("2026-12-03T12:00:00Z");
  const at = (s: number) => new Date(now.getTime() + s * 1000);
  it("retries while the next attempt is more than the send margin before the key expires; otherwise fails with the reason", () => {
    expect(retryOrGiveUp(10_000, now, at(3600), false)).toEqual({ retry: true, delayMs: 10_000 });
    expect(retryOrGiveUp(3_000_000, now, at(3600), false).retry).toBe(true); // 10 min before
    const no = retryOrGiveUp(3_570_000, now, at(3600), false);
    expect(no.retry).toBe(false);
    expect(!no.retry && no.reason).toMatch(/^not retried: the next attempt \(at 2026-12-03T12:59:30.000Z\) would come less than 60 s before its key expires at 2026-12-03T13:00:00.000Z, and a replay after expiry is unsafe/);
    expect(retryOrGiveUp(3_545_000, now, at(3600), false).retry).toBe(false); // 55 s before: inside the margin
  });
  it("does not bound an item without a live key, or a forced one", () => {
    expect(retryOrGiveUp(3_000_000, now, null, false).retry).toBe(true);
    expect(retryOrGiveUp(3_000_000, now, at(-10), false).retry).toBe(true);
    expect(retryOrGiveUp(3_000_000, now, at(3600), true).retry).toBe(true);
  });
});

/** A virtual clock: time moves only when the test advances it; timers fire in order. */
class VirtualClock implements LimiterClock {
  t = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;
  now() {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number) {
    const id = this.nextId++;
    this.timers.push({ at: this.t + ms, fn, id });
    return () => {
      this.timers = this.timers.filter((x) => x.id !== id);
    };
  }
  get pending() {
    return this.timers.length;
  }
  /** Moves time forward by `ms`, firing due timers (and letting resolved promises run) along the way. */
  async advance(ms: number) {
    const end = this.t + ms;
    for (let fired = 0; ; fired++) {
      if (fired > 100_000) throw new Error("FakeClock: timers keep re-arming within the advance");
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = next.at;
      next.fn();
      await flush();
    }
    this.t = end;
    await flush();
  }
}
const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe("RateLimiter", () => {
  /** Starts `n` takes and counts how many have been granted. */
  function takes(limiter: RateLimiter, n: number, signal?: AbortSignal) {
    const granted: number[] = [];
    const done = Array.from({ length: n }, (_, i) => limiter.take(signal).then(() => granted.push(i)));
    return { granted, done };
  }

  it("grants perSecond tokens per second, in order, without an initial flood", async () => {
    const clock = new VirtualClock();
    const limiter = new RateLimiter(50, { clock });
    const { granted } = takes(limiter, 200);
    await flush();
    expect(granted.length).toBe(1);
    await clock.advance(1000);
    expect(granted.length).toBe(51);
    await clock.advance(1000);
    expect(granted.length).toBe(101);
    await clock.advance(2000);
    expect(granted.length).toBe(200);
    expect(granted).toEqual([...Array(200).keys()]);
    expect(clock.pending).toBe(0);
  });

  it("at 500/s, 10 s of virtual time grant 5000 tokens (± the 1-token start)", async () => {
    const clock = new VirtualClock();
    const limiter = new RateLimiter(500, { clock });
    const { granted } = takes(limiter, 6000);
    await clock.advance(10_000);
    expect(granted.length).toBe(5001);
  });

  it("an idle limiter refills only up to its burst (100 ms worth)", async () => {
    const clock = new VirtualClock();
    const limiter = new RateLimiter(100, { clock });
    expect(limiter.burst).toBe(10);
    await clock.advance(60_000);
    const { granted } = takes(limiter, 30);
    await flush();
    expect(granted.length).toBe(10);
    await clock.advance(100);
    expect(granted.length).toBe(20);
  });

  it("an aborted take rejects with the signal's reason and gives its place to the next", async () => {
    const clock = new VirtualClock();
    const limiter = new RateLimiter(10, { clock });
    await limiter.take();
    const ac = new AbortController();
    const aborted = limiter.take(ac.signal);
    const next = takes(limiter, 1);
    expect(limiter.waiting).toBe(2);
    ac.abort(new Error("cancelled by operator"));
    await expect(aborted).rejects.toThrow("cancelled by operator");
    expect(limiter.waiting).toBe(1);
    await clock.advance(100);
    expect(next.granted).toEqual([0]);
    await expect(limiter.take(AbortSignal.abort())).rejects.toMatchObject({ name: "AbortError" });
  });

  it("aborting every waiter leaves no timer behind", async () => {
    const clock = new VirtualClock();
    const limiter = new RateLimiter(1, { clock });
    await limiter.take();
    const ac = new AbortController();
    const p = Promise.allSettled([limiter.take(ac.signal), limiter.take(ac.signal)]);
    expect(clock.pending).toBe(1);
    ac.abort();
    expect((await p).map((s) => s.status)).toEqual(["rejected", "rejected"]);
    expect(clock.pending).toBe(0);
  });

  it("refuses a rate that is not positive", () => {
    expect(() => new RateLimiter(0)).toThrow(RangeError);
    expect(() => new RateLimiter(Number.NaN)).toThrow(RangeError);
  });
});
