/**
 * Per-attempt evidence (issue 13 §10): every replay attempt is kept (time, destination, HTTP status,
 * latency, the first 2 KiB of the answer decoded safely, error) and served newest first by
 * GET /api/v1/dead-letters/{id}/attempts with cursor pagination (through the route handler). The item's
 * and the dead letter's last status and last error come from one and the same (latest) attempt, and an
 * error names its status once. The destination is a scripted node:http server: each request gets the next
 * answer of its script.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { parseInput } from "@/lib/http/validate";
import { startReplayRequest } from "@/lib/replay/schema";
import { GET as attemptsRoute } from "@/app/api/v1/dead-letters/[id]/attempts/route";
import { GET as deadLetterRoute } from "@/app/api/v1/dead-letters/[id]/route";
import { cliPrincipal } from "@/lib/auth/principal";
import { startReplayWorker, type ReplayWorker } from "@/lib/replay/executor";
import { createPreflight } from "@/lib/replay/preflight";
import { getReplay, startReplay } from "@/lib/replay/replays";
import { decodeExcerpt, EVIDENCE_BODY_BYTES } from "@/lib/replay/send-http";
import { makeSource, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { readyForReplay, seedDeadLetters } from "@/test/setup/replay";

const ACTOR = cliPrincipal();

describe("decodeExcerpt (pure)", () => {
  it("decodes UTF-8, invalid bytes and NUL as U+FFFD, and drops a sequence cut off at the end", () => {
    expect(decodeExcerpt(Buffer.from("ok é ✓", "utf8"))).toBe("ok é ✓");
    expect(decodeExcerpt(Buffer.from([0x61, 0xff, 0x62, 0x00, 0x63]))).toBe("a\uFFFDb\uFFFDc");
    const cut = Buffer.from("ab✓", "utf8").subarray(0, 4); // "ab" + the first 2 of ✓'s 3 bytes
    expect(decodeExcerpt(cut)).toBe("ab");
    expect(decodeExcerpt(Buffer.alloc(0))).toBe("");
  });
});

type Answer = { status: number; body?: string | Buffer } | "destroy" | { wait: Promise<void>; status: number; body?: string };

/** A destination answering each request with the next entry of `script` (the last one repeats). */
async function scripted(script: Answer[]) {
  let n = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      const a = script[Math.min(n++, script.length - 1)];
      if (a === "destroy") return res.socket?.destroy();
      if ("wait" in a) await a.wait;
      res.writeHead(a.status, { "content-type": "text/plain" });
      res.end(a.body ?? "");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  servers.push(server);
  return { url, requests: () => n };
}

const servers: http.Server[] = [];
const workers: ReplayWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop();
});
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

type Handler = (req: Request, ctx?: { params: Promise<Record<string, string>> }) => Promise<Response>;
let readKey: string | undefined;
async function get(handler: Handler, path: string, params: Record<string, string>) {
  readKey ??= (await makeApiKey(["read"])).key;
  const res = await handler(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${readKey}` } }), {
    params: Promise.resolve(params),
  });
  return { status: res.status, body: JSON.parse(await res.text()) };
}

/** Waits (bounded) until `check` holds. */
async function until(what: string, check: () => Promise<boolean> | boolean, ms = 60_000) {
  await expect.poll(check, { timeout: ms, interval: 50, message: what }).toBe(true);
}

/** One dead letter replayed to `url` by a worker of this file; answers its id and the replay's. */
async function replayOne(url: string) {
  const source = await makeSource();
  await readyForReplay(source, url);
  const [letterId] = await seedDeadLetters(source, [`evt-${uniq()}`]);
  const pf = await createPreflight({ source }, ACTOR);
  const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], concurrency: 1 }), uniq("k"), ACTOR);
  workers.push(startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: 5000, log: () => {}, sources: () => [source] }));
  return { letterId, replayId, source };
}

const attemptsOf = async (letterId: string, query = "") => get(attemptsRoute, `/api/v1/dead-letters/${letterId}/attempts${query}`, { id: letterId });

describe("replay attempts", { timeout: 90_000 }, () => {
  it("keeps every attempt, newest first; the item's last status and error always come from its latest attempt", async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const dest = await scripted([{ status: 503, body: "overloaded, try later" }, "destroy", { wait: released, status: 200, body: "thanks" }]);
    const { letterId, replayId } = await replayOne(dest.url);

    // After the second attempt (no answer at all) the item must not show the first attempt's 503.
    await until("two attempts recorded", async () => (await attemptsOf(letterId)).body.items.length >= 2);
    const mid = (await getReplay(replayId)).items[0];
    expect(mid.attempts).toBe(2);
    expect(mid.lastStatus).toBeNull();
    expect(mid.lastError).toBe(`connection to ${new URL(dest.url).host} closed before a response`);
    release();
    await until("completion", async () => (await getReplay(replayId)).status === "completed");

    const done = (await getReplay(replayId)).items[0];
    expect(done).toMatchObject({ outcome: "delivered", attempts: 3, lastStatus: 200, lastError: null });
    const res = await attemptsOf(letterId);
    expect(res.status).toBe(200);
    expect(res.body.next).toBeNull();
    const items = res.body.items;
    expect(items.map((a: { attempt: number; outcome: string; status: number | null }) => [a.attempt, a.outcome, a.status])).toEqual([
      [3, "delivered", 200],
      [2, "retry", null],
      [1, "retry", 503],
    ]);
    expect(items[0]).toMatchObject({ replayId, destination: dest.url, responseBody: "thanks", error: null });
    expect(items[1]).toMatchObject({ responseBody: null, error: `connection to ${new URL(dest.url).host} closed before a response` });
    expect(items[2]).toMatchObject({ responseBody: "overloaded, try later", error: "HTTP 503 Service Unavailable: overloaded, try later" });
    // The headers sent (the signature masked: its scheme and first characters only) and the answer's (issue 23 item 7).
    const sent = new Map<string, string>(items[0].requestHeaders);
    expect(sent.get("content-type")).toBe("application/json");
    expect(sent.get("webhook-id")).toMatch(/^evt-/);
    expect(sent.get("webhook-signature")).toMatch(/^v1,\S{6}… \(masked\)$/);
    expect(Number(sent.get("content-length"))).toBeGreaterThan(0);
    expect(items[0].responseHeaders.map(([n]: [string, string]) => n.toLowerCase())).toContain("date");
    expect(items[1].responseHeaders).toBeNull(); // no answer at all
    expect(items[2].responseHeaders.length).toBeGreaterThan(0);
    for (const a of items) {
      expect(Number.isInteger(a.latencyMs) && a.latencyMs >= 0).toBe(true);
      expect(typeof a.id).toBe("string");
    }
    expect(Date.parse(items[0].at)).toBeGreaterThan(Date.parse(items[1].at));
    expect(Date.parse(items[1].at)).toBeGreaterThan(Date.parse(items[2].at));

    // Cursor pagination: one at a time gives the same three, then no next.
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 5; page++) {
      const r: { status: number; body: { items: { id: string }[]; next: string | null } } = await attemptsOf(
        letterId,
        `?limit=1${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(r.status).toBe(200);
      seen.push(...r.body.items.map((a) => a.id));
      cursor = r.body.next;
      if (!cursor) break;
    }
    expect(seen).toEqual(items.map((a: { id: string }) => a.id));
  });

  it("a final failure: the dead letter's last status and error are those of its latest attempt, the status named once", async () => {
    const dest = await scripted([{ status: 503, body: "busy" }, { status: 422, body: '{"error":"invalid order"}' }]);
    const { letterId, replayId } = await replayOne(dest.url);
    await until("completion", async () => (await getReplay(replayId)).status === "completed");
    const item = (await getReplay(replayId)).items[0];
    expect(item).toMatchObject({ outcome: "failed", attempts: 2, lastStatus: 422, lastError: 'HTTP 422 Unprocessable Entity: {"error":"invalid order"}' });
    const letter = await get(deadLetterRoute, `/api/v1/dead-letters/${letterId}`, { id: letterId });
    expect(letter.status).toBe(200);
    expect(letter.body).toMatchObject({
      status: "pending",
      lastReplayStatus: 422,
      lastReplayError: 'HTTP 422 Unprocessable Entity: {"error":"invalid order"}',
      settledBy: null,
      settleReason: null,
    });
    expect(letter.body.lastReplayError.match(/HTTP \d{3}/g)).toHaveLength(1);
    const attempts = (await attemptsOf(letterId)).body.items;
    expect(attempts.map((a: { outcome: string }) => a.outcome)).toEqual(["failed", "retry"]);
  });

  it("keeps the first 2 KiB of an answer as text: invalid bytes and NUL as U+FFFD, a character cut at the end dropped", async () => {
    const head = Buffer.from("a".repeat(EVIDENCE_BODY_BYTES - 8), "ascii");
    const odd = Buffer.from([0xff, 0x00, 0x41, 0x42, 0x43, 0x44]); // 6 bytes: invalid, NUL, ABCD
    const straddle = Buffer.from("✓", "utf8"); // 3 bytes: 2 inside the 2 KiB, 1 outside
    const body = Buffer.concat([head, odd, straddle, Buffer.from("x".repeat(1000))]);
    expect(head.length + odd.length + 2).toBe(EVIDENCE_BODY_BYTES);
    const dest = await scripted([{ status: 400, body }]);
    const { letterId, replayId } = await replayOne(dest.url);
    await until("completion", async () => (await getReplay(replayId)).status === "completed");
    const [a] = (await attemptsOf(letterId)).body.items;
    expect(a).toMatchObject({ outcome: "failed", status: 400 });
    expect(a.responseBody).toBe(`${"a".repeat(EVIDENCE_BODY_BYTES - 8)}\uFFFD\uFFFDABCD`);
  });

  it("answers 404 for an unknown letter and 422 for a cursor not from a previous page", async () => {
    const unknown = "00000000-0000-4000-8000-000000000000";
    expect((await attemptsOf(unknown)).status).toBe(404);
    expect((await get(attemptsRoute, "/api/v1/dead-letters/not-an-id/attempts", { id: "not-an-id" })).status).toBe(404);
    const source = await makeSource();
    const [letterId] = await seedDeadLetters(source, [`evt-${uniq()}`]);
    const empty = await attemptsOf(letterId);
    expect(empty).toEqual({ status: 200, body: { items: [], next: null } });
    const bad = await attemptsOf(letterId, "?cursor=bm90LWEtY3Vyc29y");
    expect(bad.status).toBe(422);
    expect(bad.body.error.message).toMatch(/cursor/);
    expect((await attemptsOf(letterId, "?limit=0")).status).toBe(422);
  });
});
