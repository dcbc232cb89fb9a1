/**
 * A webhook receiver for the replay tests and the bench, written the way a careful handler is: it
 * verifies the Standard Webhooks signature with the standardwebhooks package (401 when it does not
 * verify), claims the event through Keyward's claim API (POST /api/v1/claims, Bearer key with scope
 * claims:write) with the original event id (the `keyward-event-id` header, percent-decoded; `webhook-id`
 * when absent) as the event id, and "processes" the event only when the claim answers `claimed`.
 * Every request is also kept as received (`deliveries`: raw body bytes, raw header bytes, and whether an
 * independent hand-written HMAC over those bytes matches), so tests can compare bytes exactly. It counts how many times it
 * processed each event id, so a test can prove "exactly once".
 *
 * Answers: 200 processed · 200 duplicate (already processed: the replay is done) · 401 bad signature ·
 * 503 injected failure (before claiming, so the event stays unclaimed) · 503 in_flight (another handler
 * holds the claim: try later) · 503 when the claim API fails · 409 payload_mismatch · 413 body > 1 MiB.
 *
 * Knobs: `failureRate` (0..1, decided by a seeded random so a run is reproducible; `failStatus` and
 * `failBody` say what such a failure answers), `hang` (never answer), `latencyMs` (added
 * before the claim), `leaseSeconds` (claim with a lease and complete it after processing, as a handler
 * with real work would; without it the claim is done at once: one round trip per event), `claimRetryMs`
 * (resend a claim whose answer was lost, as docs/reliability.md's attemptId contract says a handler must).
 *
 * Every claim carries an attemptId, fresh per delivery. A claim answered by nothing (the connection
 * failed) or by 502/503/504 may still have committed; without `claimRetryMs` the receiver answers 503 at
 * once, and a lease-less key that did commit then reads `duplicate` to every redelivery: the event is never
 * processed. With it, the receiver resends the same claim until it gets an answer, and the attempt that made
 * the key is answered `claimed` again.
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { timePasses } from "./time";

export type ReceiverOptions = {
  /** Keyward's base URL, e.g. http://127.0.0.1:3000. */
  keywardUrl: string;
  /** An API key with scope claims:write. */
  apiKey: string;
  /** The source the events are claimed under. */
  source: string;
  /** The signing secret (whsec_…); can be set later with setSecret(). */
  secret?: string;
  /** Fraction of verified requests answered 503 before claiming (0..1, default 0). */
  failureRate?: number;
  /** Seed of the failure decisions (default 1). */
  seed?: number;
  /** Milliseconds to wait before claiming each verified request (default 0). */
  latencyMs?: number;
  /** Claim with this lease and complete after processing (default: no lease). */
  leaseSeconds?: number;
  /** Also send sha256(body bytes) as the claim's payloadHash (default false). */
  payloadHash?: boolean;
  /** Event type when the body has no string `type` field (default "replayed"). */
  eventType?: string;
  /** The status and body of an injected failure (default 503 `{"error":"injected failure"}`). */
  failStatus?: number;
  failBody?: string;
  /** Never answer a verified request (it hangs until the client gives up or the receiver stops). */
  hang?: boolean;
  /**
   * Resend a claim that failed ambiguously (no answer, or 502/503/504) with the same attemptId for up to this
   * many milliseconds (default 0: answer 503 at once). For a test that kills Keyward under the receiver.
   */
  claimRetryMs?: number;
};

export type ReceiverCounts = {
  /** Every request received. */
  requests: number;
  /** Requests whose signature did not verify (answered 401). */
  badSignatures: number;
  /** Injected failures (answered 503 before claiming). */
  failures: number;
  /** Claims answered `duplicate` (answered 200, not processed). */
  duplicates: number;
  /** Claims answered `in_flight` (answered 503). */
  inFlight: number;
  /** Claim API calls that failed (network, 4xx/5xx other than the outcomes; answered 503). */
  claimErrors: number;
  /** Claims answered `payload_mismatch` (answered 409). */
  payloadMismatches: number;
  /** Verified requests left without an answer (the `hang` knob). */
  hung: number;
  /** Times each event id was processed. */
  processed: Record<string, number>;
};

/** One request as it arrived: the body's bytes, each header's bytes (lower-cased names), the verdicts. */
export type Delivery = {
  body: Buffer;
  headers: Record<string, Buffer>;
  /** The standardwebhooks package's verify accepted it. */
  verified: boolean;
  /** A hand-written HMAC-SHA256 over the header and body bytes as received matches a v1 signature. */
  handVerified: boolean;
};

/**
 * Standard Webhooks verification written from the spec, independent of the package: HMAC-SHA256 keyed
 * with the decoded secret over the bytes "webhook-id.webhook-timestamp.body" exactly as they arrived.
 */
export function handVerify(secret: string, headers: Record<string, Buffer>, body: Buffer): boolean {
  const id = headers["webhook-id"];
  const ts = headers["webhook-timestamp"];
  const sig = headers["webhook-signature"];
  if (!id || !ts || !sig) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(Buffer.concat([id, Buffer.from("."), ts, Buffer.from("."), body])).digest();
  return sig
    .toString("latin1")
    .split(" ")
    .some((part) => {
      const [version, value] = part.split(",");
      const given = Buffer.from(value ?? "", "base64");
      return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

const MAX_BODY = 1024 * 1024;

/** mulberry32: a tiny seeded PRNG with values in [0, 1); reproducible failure injection. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Receiver {
  url = "";
  private secret: string | undefined;
  private readonly random: () => number;
  private readonly counts: ReceiverCounts = {
    requests: 0,
    badSignatures: 0,
    failures: 0,
    duplicates: 0,
    inFlight: 0,
    claimErrors: 0,
    payloadMismatches: 0,
    hung: 0,
    processed: {},
  };
  private readonly server: http.Server;
  /** Requests being handled now (idle() waits for none). */
  private active = 0;
  /** idle()'s waiters, called once `active` falls to 0. */
  private idlers: (() => void)[] = [];
  /** performance.now() of each request's arrival (the bench derives the delivery rate from it). */
  readonly arrivals: number[] = [];
  /** Every request as received, in arrival order. */
  readonly deliveries: Delivery[] = [];

  constructor(private readonly o: ReceiverOptions) {
    this.secret = o.secret;
    this.random = seededRandom(o.seed ?? 1);
    this.server = http.createServer((req, res) => {
      this.active += 1;
      void this.handle(req, res)
        .catch((err: Error) => {
          if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
          res.end(`receiver error: ${err.message}`);
        })
        .finally(() => {
          this.active -= 1;
          if (this.active === 0) for (const idle of this.idlers.splice(0)) idle();
        });
    });
    // Longer than a client's idle keep-alive (undici: 4 s), so a client never reuses a socket we are closing.
    this.server.keepAliveTimeout = 60_000;
  }

  /** Listens on 127.0.0.1 and a free port; `url` is then the address to deliver to. */
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/webhook`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  setSecret(secret: string): void {
    this.secret = secret;
  }

  /** Changes the injected failure rate from now on (e.g. a receiver that recovers). */
  setFailureRate(rate: number): void {
    this.o.failureRate = rate;
  }

  /** Starts or stops hanging (requests already hanging stay so). */
  setHang(hang: boolean): void {
    this.o.hang = hang;
  }

  /** A snapshot of the counters. */
  snapshot(): ReceiverCounts {
    return { ...this.counts, processed: { ...this.counts.processed } };
  }

  /** How many times `eventId` was processed. */
  timesProcessed(eventId: string): number {
    return this.counts.processed[eventId] ?? 0;
  }

  /** Processings in total (an event processed twice counts twice). */
  get totalProcessed(): number {
    return Object.values(this.counts.processed).reduce((a, b) => a + b, 0);
  }

  /**
   * Resolves once no request is being handled (a claim still being resent counts), so a test reads final
   * counts; hanging requests (`hang`) never finish: don't wait on a hanging receiver.
   */
  async idle(timeoutMs = 60_000): Promise<void> {
    if (this.active === 0) return;
    await new Promise<void>((resolve, reject) => {
      const idle = () => {
        clearTimeout(bound);
        resolve();
      };
      const bound = setTimeout(() => {
        this.idlers = this.idlers.filter((i) => i !== idle);
        reject(new Error(`receiver: ${this.active} request(s) still running after ${timeoutMs} ms`));
      }, timeoutMs);
      this.idlers.push(idle);
    });
  }

  /** Event ids processed more than once. */
  processedTwice(): string[] {
    return Object.entries(this.counts.processed)
      .filter(([, n]) => n > 1)
      .map(([id]) => id);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.counts.requests += 1;
    this.arrivals.push(performance.now());
    const raw = await readBody(req);
    if (raw === null) return reply(res, 413, { error: "body larger than 1 MiB" });
    if (req.method !== "POST") return reply(res, 405, { error: "POST only" });

    // Node decodes header values as Latin-1, so this gives back the bytes on the wire.
    const rawHeaders: Record<string, Buffer> = {};
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) rawHeaders[req.rawHeaders[i].toLowerCase()] = Buffer.from(req.rawHeaders[i + 1], "latin1");
    const delivery: Delivery = { body: raw, headers: rawHeaders, verified: false, handVerified: false };
    this.deliveries.push(delivery);
    const body = raw.toString("utf8");
    const headers = {
      "webhook-id": String(req.headers["webhook-id"] ?? ""),
      "webhook-timestamp": String(req.headers["webhook-timestamp"] ?? ""),
      "webhook-signature": String(req.headers["webhook-signature"] ?? ""),
    };
    try {
      if (!this.secret) throw new Error("no secret configured");
      new Webhook(this.secret).verify(body, headers, { jsonParse: false });
      delivery.verified = true;
    } catch (err) {
      this.counts.badSignatures += 1;
      return reply(res, 401, { error: `signature: ${(err as Error).message}` });
    } finally {
      delivery.handVerified = this.secret ? handVerify(this.secret, rawHeaders, raw) : false;
    }
    let parsed: unknown = null;
    if (/json/i.test(String(req.headers["content-type"] ?? ""))) {
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = null;
      }
    }

    if (this.o.hang) {
      this.counts.hung += 1;
      return;
    }
    if ((this.o.failureRate ?? 0) > 0 && this.random() < this.o.failureRate!) {
      this.counts.failures += 1;
      if (this.o.failBody !== undefined || this.o.failStatus !== undefined) {
        res.writeHead(this.o.failStatus ?? 503, { "content-type": "text/plain" });
        res.end(this.o.failBody ?? "");
        return;
      }
      return reply(res, 503, { error: "injected failure" });
    }
    if (this.o.latencyMs) await timePasses(this.o.latencyMs, "the handler's latency the test asked for (latencyMs), before its claim");

    const original = req.headers["keyward-event-id"];
    const eventId = typeof original === "string" ? decodeURIComponent(original) : headers["webhook-id"];
    const type = (parsed as { type?: unknown } | null)?.type;
    const claim = await this.claim({
      source: this.o.source,
      eventId,
      eventType: typeof type === "string" && type ? type.slice(0, 128) : (this.o.eventType ?? "replayed"),
      ...(this.o.payloadHash ? { payloadHash: createHash("sha256").update(raw).digest("hex") } : {}),
      ...(this.o.leaseSeconds ? { leaseSeconds: this.o.leaseSeconds } : {}),
      attemptId: randomUUID(),
    });
    const outcome = (claim.body as { outcome?: string } | null)?.outcome;
    if (claim.status === 201 && outcome === "claimed") {
      // The processing: here, counting. With a lease, the claim is completed once the work is done.
      this.counts.processed[eventId] = (this.counts.processed[eventId] ?? 0) + 1;
      if (this.o.leaseSeconds) {
        const token = (claim.body as { claimToken: string }).claimToken;
        const done = await this.keyward("/api/v1/claims/complete", { source: this.o.source, eventId, claimToken: token });
        if (done.status !== 200) {
          this.counts.claimErrors += 1;
          return reply(res, 503, { error: `complete failed: ${done.status}` });
        }
      }
      return reply(res, 200, { outcome: "processed" });
    }
    if (claim.status === 200 && outcome === "duplicate") {
      this.counts.duplicates += 1;
      return reply(res, 200, { outcome: "duplicate" });
    }
    if (claim.status === 409 && outcome === "in_flight") {
      this.counts.inFlight += 1;
      return reply(res, 503, { outcome: "in_flight" });
    }
    if (claim.status === 409 && outcome === "payload_mismatch") {
      this.counts.payloadMismatches += 1;
      return reply(res, 409, { outcome: "payload_mismatch" });
    }
    this.counts.claimErrors += 1;
    return reply(res, 503, { error: `claim failed: ${claim.status}` });
  }

  /** One claim, resent unchanged (the same attemptId) after an ambiguous failure while `claimRetryMs` allows. */
  private async claim(body: Record<string, unknown>): Promise<{ status: number; body: unknown }> {
    const deadline = Date.now() + (this.o.claimRetryMs ?? 0);
    for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
      const answer = await this.keyward("/api/v1/claims", body);
      const ambiguous = answer.status === 0 || answer.status === 502 || answer.status === 503 || answer.status === 504;
      if (!ambiguous || Date.now() + delay > deadline) return answer;
      await timePasses(delay, "a client's backoff between resends of a claim whose answer was lost (claimRetryMs)");
    }
  }

  private async keyward(path: string, body: unknown): Promise<{ status: number; body: unknown }> {
    try {
      const res = await fetch(this.o.keywardUrl + path, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${this.o.apiKey}` },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = null;
      }
      return { status: res.status, body: parsed };
    } catch {
      return { status: 0, body: null };
    }
  }
}

/** Starts a receiver; the caller stops it. */
export async function startReceiver(o: ReceiverOptions): Promise<Receiver> {
  return new Receiver(o).start();
}

function readBody(req: http.IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooBig = false;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) tooBig = true;
      else chunks.push(c);
    });
    req.on("end", () => resolve(tooBig ? null : Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
