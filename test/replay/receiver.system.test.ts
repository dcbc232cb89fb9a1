/**
 * test/setup/receiver.ts against a real Keyward server (its claim API) and real signed deliveries
 * (lib/replay/deliver.ts): signature checks, claim-based exactly-once processing, seeded failure
 * injection, leases, in-flight events, a failing claim API, and a claim whose answer is lost after it committed.
 */
import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { deliverOnce } from "@/lib/replay/deliver";
import { startTestServer } from "@/test/setup/auth";
import { makeSource, uniq } from "@/test/setup/db";
import { keyRow, makeApiKey } from "@/test/setup/http";
import { seededRandom, startReceiver, type Receiver, type ReceiverOptions } from "@/test/setup/receiver";
import { stopServer, type Server } from "@/test/setup/server";

const newSecret = () => `whsec_${randomBytes(24).toString("base64")}`;

const spawned: Server[] = [];
const receivers: Receiver[] = [];
let baseUrl: string;
let apiKey: string;

beforeAll(async () => {
  ({ baseUrl } = await startTestServer(spawned));
  apiKey = (await makeApiKey(["claims:write"])).key;
});
afterAll(async () => {
  for (const r of receivers) await r.stop();
  for (const s of spawned) await stopServer(s);
});

async function receiver(o: Partial<ReceiverOptions> = {}) {
  const source = o.source ?? (await makeSource());
  const secret = o.secret ?? newSecret();
  const r = await startReceiver({ keywardUrl: baseUrl, apiKey, source, secret, ...o });
  receivers.push(r);
  return { r, source, secret };
}

const deliver = (r: Receiver, secret: string, id: string, body = JSON.stringify({ type: "order.paid", id })) =>
  deliverOnce({ url: r.url, id, body, secret, replayId: "rp-test" });

describe("receiver", () => {
  it("processes a verified event once; the same event again is a duplicate (2xx, not processed)", async () => {
    const { r, source, secret } = await receiver();
    const id = uniq("evt");
    expect(await deliver(r, secret, id)).toMatchObject({ ok: true, status: 200 });
    expect(await deliver(r, secret, id)).toMatchObject({ ok: true, status: 200 });
    expect(r.timesProcessed(id)).toBe(1);
    expect(r.snapshot()).toMatchObject({ requests: 2, duplicates: 1, badSignatures: 0, failures: 0, claimErrors: 0 });
    const key = await keyRow(source, id);
    expect(key).toMatchObject({ status: "done", event_type: "order.paid", duplicate_count: 1 });
  });

  it("answers 401 to a wrong signature and claims nothing", async () => {
    const { r, source } = await receiver();
    const id = uniq("evt");
    const res = await deliver(r, newSecret(), id);
    expect(res).toMatchObject({ ok: false, status: 401, retryable: false });
    expect(res.error).toMatch(/^HTTP 401 Unauthorized: .*signature/);
    expect(r.snapshot()).toMatchObject({ requests: 1, badSignatures: 1, processed: {} });
    expect(await keyRow(source, id)).toBeUndefined();

    const unsigned = await fetch(r.url, { method: "POST", body: "{}" });
    expect(unsigned.status).toBe(401);
    expect(r.snapshot().badSignatures).toBe(2);
  });

  it("fails the seeded share of requests with 503 before claiming; retries then process each event once", async () => {
    const seed = 7;
    const { r, source, secret } = await receiver({ failureRate: 0.5, seed });
    const ids = Array.from({ length: 40 }, () => uniq("evt"));
    const first = [];
    for (const id of ids) first.push(await deliver(r, secret, id));

    const draws = seededRandom(seed);
    const expectedFailures = ids.map(() => draws() < 0.5);
    expect(first.map((x) => !x.ok)).toEqual(expectedFailures);
    const failed = ids.filter((_, i) => expectedFailures[i]);
    expect(failed.length).toBeGreaterThan(5);
    expect(failed.length).toBeLessThan(35);
    for (const x of first.filter((x) => !x.ok)) expect(x).toMatchObject({ status: 503, retryable: true });
    for (const id of failed) expect(await keyRow(source, id)).toBeUndefined();

    r.setFailureRate(0);
    for (const id of failed) expect(await deliver(r, secret, id)).toMatchObject({ ok: true });
    const counts = r.snapshot();
    expect(counts.failures).toBe(failed.length);
    expect(Object.keys(counts.processed).sort()).toEqual([...ids].sort());
    expect(r.processedTwice()).toEqual([]);
    expect(r.totalProcessed).toBe(40);
  });

  it("with a lease, completes the claim after processing", async () => {
    const { r, source, secret } = await receiver({ leaseSeconds: 60 });
    const id = uniq("evt");
    expect(await deliver(r, secret, id)).toMatchObject({ ok: true, status: 200 });
    expect(r.timesProcessed(id)).toBe(1);
    expect((await keyRow(source, id))?.status).toBe("done");
  });

  it("an event another handler holds (in flight) is a retryable 503, not processed", async () => {
    const { r, source, secret } = await receiver();
    const id = uniq("evt");
    await claimEvent({ source, eventId: id, eventType: "order.paid", leaseSeconds: 300 });
    const res = await deliver(r, secret, id);
    expect(res).toMatchObject({ ok: false, status: 503, retryable: true });
    expect(r.snapshot()).toMatchObject({ inFlight: 1, processed: {} });
  });

  it("a claim API that refuses the key is a retryable 503 and nothing is processed", async () => {
    const readOnly = (await makeApiKey(["claims:read"])).key;
    const { r, secret } = await receiver({ apiKey: readOnly });
    const id = uniq("evt");
    expect(await deliver(r, secret, id)).toMatchObject({ ok: false, status: 503, retryable: true });
    expect(r.snapshot()).toMatchObject({ claimErrors: 1, processed: {} });
  });

  it("adds the configured latency before claiming (the request still succeeds)", async () => {
    const { r, secret } = await receiver({ latencyMs: 50 });
    const id = uniq("evt");
    expect(await deliver(r, secret, id)).toMatchObject({ ok: true });
    expect(r.timesProcessed(id)).toBe(1);
  });

  it("a claim whose answer is lost after commit: given up, the event is never processed; resent (same attemptId), it is processed once", async () => {
    // A front for Keyward that passes the first claim on (it commits), then cuts the connection instead of
    // answering: the answer is lost after commit, as when Keyward is killed mid-request.
    const front = await loseFirstClaimAnswer(baseUrl);
    try {
      const gaveUp = await receiver({ keywardUrl: front.url });
      const lost = uniq("evt");
      expect(await deliver(gaveUp.r, gaveUp.secret, lost)).toMatchObject({ ok: false, status: 503 });
      expect(await keyRow(gaveUp.source, lost)).toMatchObject({ status: "done" }); // it did commit
      // Every redelivery now reads `duplicate`: the event is lost.
      expect(await deliver(gaveUp.r, gaveUp.secret, lost)).toMatchObject({ ok: true, status: 200 });
      expect(gaveUp.r.timesProcessed(lost)).toBe(0);

      front.reset();
      const resends = await receiver({ keywardUrl: front.url, claimRetryMs: 30_000 });
      const id = uniq("evt");
      expect(await deliver(resends.r, resends.secret, id)).toMatchObject({ ok: true, status: 200 });
      expect(front.claims).toBe(2); // the lost one and its resend
      expect(resends.r.timesProcessed(id)).toBe(1);
      expect(await deliver(resends.r, resends.secret, id)).toMatchObject({ ok: true, status: 200 });
      expect(resends.r.timesProcessed(id)).toBe(1);
      expect(resends.r.snapshot()).toMatchObject({ duplicates: 1, claimErrors: 0 });
      await resends.r.idle();
    } finally {
      await front.stop();
    }
  });
});

/** An HTTP front that forwards to `target`, except that it cuts the connection of the first claim after forwarding it. */
async function loseFirstClaimAnswer(target: string) {
  let claims = 0;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "content-length") headers[k] = v;
    const answer = await fetch(target + req.url, { method: req.method, headers, body: Buffer.concat(chunks) });
    const body = Buffer.from(await answer.arrayBuffer());
    if (req.url === "/api/v1/claims" && ++claims === 1) {
      req.socket.destroy();
      return;
    }
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get claims() {
      return claims;
    },
    reset() {
      claims = 0;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
