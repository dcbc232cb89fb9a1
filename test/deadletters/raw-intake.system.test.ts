/**
 * Dead letters at real sizes, as senders send them (issue 26): POST /api/v1/dead-letters/raw takes a failed
 * delivery's body byte for byte with its Content-Type, reads the event id and type from a header or a JSON
 * path, keeps the sender's delivery and signature headers (never credentials), and a replay sends exactly
 * those bytes with that Content-Type; a GitHub push of ~319 KiB goes in through the raw intake and the
 * JSON envelope alike; a UTF-8 BOM before JSON is dropped; a 6 MiB payload goes in (the bench: 20 MiB), is shown by its
 * first part, downloads whole and replays byte for byte. Through the real route handlers and PostgreSQL.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { POST as raw } from "@/app/api/v1/dead-letters/raw/route";
import { POST as single } from "@/app/api/v1/dead-letters/route";
import { GET as detail } from "@/app/api/v1/dead-letters/[id]/route";
import { GET as download } from "@/app/api/v1/dead-letters/[id]/payload/route";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { PAYLOAD_PREVIEW_BYTES } from "@/lib/deadletters/schema";
import { startReplayRequest } from "@/lib/replay/schema";
import { startReplayWorker, type ReplayWorker } from "@/lib/replay/executor";
import { createPreflight } from "@/lib/replay/preflight";
import { getReplay, startReplay } from "@/lib/replay/replays";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey, post } from "@/test/setup/http";
import { eventually } from "@/test/setup/rabbitmq";
import { readyForReplay } from "@/test/setup/replay";

const workers: ReplayWorker[] = [];
const servers: http.Server[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop();
});
afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
});

/** POSTs `body` as is to the raw intake, with the query string and headers given. */
async function postRaw(key: string, query: Record<string, string>, body: Buffer | string, headers: Record<string, string> = {}) {
  const bytes = typeof body === "string" ? body : new Uint8Array(body);
  return post(raw, null, { key, raw: bytes, contentType: null, headers, path: `/api/v1/dead-letters/raw?${new URLSearchParams(query)}` });
}

const stored = async (id: string) =>
  (
    await sql<{ payload: Buffer; content_type: string; payload_bytes: number; event_id: string; event_type: string; sender_headers: unknown; error: string }>(
      "SELECT payload, content_type, payload_bytes, event_id, event_type, sender_headers, error FROM dead_letters WHERE id = $1",
      [id],
    )
  )[0];

/** A GitHub `push` delivery body of about `kib` KiB, as GitHub writes it (escaped slashes, non-ASCII, big ids). */
function githubPush(kib: number): Buffer {
  const commit = (i: number) =>
    `{"id":"${i.toString(16).padStart(40, "0")}","tree_id":"${(i * 7).toString(16).padStart(40, "0")}","distinct":true,` +
    `"message":"Fix überlong line ${i} \\u2014 see #${i}","timestamp":"2026-12-05T10:00:00+01:00",` +
    `"url":"https:\\/\\/github.com\\/octo\\/repo\\/commit\\/${i}","author":{"name":"Zoë","email":"zoe@example.com","username":"zoe"},` +
    `"added":["src\\/a${i}.ts"],"removed":[],"modified":["README.md","src\\/b${i}.ts"]}`;
  const commits: string[] = [];
  let size = 0;
  for (let i = 0; size < kib * 1024 - 600; i++) {
    commits.push(commit(i));
    size += commits[commits.length - 1].length + 1;
  }
  return Buffer.from(
    `{"ref":"refs/heads/main","before":"${"0".repeat(40)}","after":"${"f".repeat(40)}","repository":{"id":820982911946154508,"full_name":"octo/repo"},` +
      `"pusher":{"name":"zoe"},"commits":[${commits.join(",")}],"head_commit":null}`,
  );
}

/** An HTTP destination that keeps every request's body and headers and answers 200. */
async function capture(): Promise<{ url: string; received: { body: Buffer; headers: http.IncomingHttpHeaders }[] }> {
  const received: { body: Buffer; headers: http.IncomingHttpHeaders }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ body: Buffer.concat(chunks), headers: req.headers });
      res.writeHead(200).end("ok");
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

/** Replays every pending letter of `source` and waits for the replay to complete. */
async function replayAll(source: string): Promise<void> {
  const pf = await createPreflight({ source }, cliPrincipal());
  const { replayId } = await startReplay(
    parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 100 }),
    uniq("k"),
    cliPrincipal(),
  );
  const w = startReplayWorker({ pollMs: 50, leaseSeconds: 10, timeoutMs: 30_000, log: (m) => console.error(`[worker] ${m}`), sources: () => [source] });
  workers.push(w);
  await eventually(async () => ((await getReplay(replayId)).status === "completed" ? true : undefined), "the replay to complete", 60_000);
}

describe("POST /api/v1/dead-letters/raw", () => {
  it("a GitHub push of ~319 KiB: stored byte for byte, id and type from its headers, signature headers kept, credentials not; the envelope takes it too", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const body = githubPush(319);
    expect(body.length).toBeGreaterThan(318 * 1024);
    const delivery = uniq("gh-delivery");
    const res = await postRaw(
      key,
      { source, eventIdFrom: "header:X-GitHub-Delivery", eventTypeFrom: "header:x-github-event", error: "HTTP 502 from the consumer", attempts: "3" },
      body,
      {
        "content-type": "application/json",
        "x-github-delivery": delivery,
        "x-github-event": "push",
        "x-hub-signature-256": "sha256=abc123",
        "user-agent": "GitHub-Hookshot/abc",
        "x-gitlab-token": "a-shared-secret",
        "x-unrelated": "dropped",
        cookie: "session=nope",
      },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ eventId: delivery, eventType: "push", contentType: "application/json", payloadBytes: body.length });
    const row = await stored(res.body.id);
    expect(row.payload.equals(body)).toBe(true);
    expect(row).toMatchObject({ event_id: delivery, event_type: "push", error: "HTTP 502 from the consumer" });
    const names = (row.sender_headers as { name: string; value: string }[]).map((h) => h.name).sort();
    expect(names).toEqual(["user-agent", "x-github-delivery", "x-github-event", "x-hub-signature-256"]);

    // The letter's page shows them; a payload of this size comes whole.
    const { key: reader } = await makeApiKey(["read"]);
    const page = await (await detail(new Request(`http://localhost/x/${res.body.id}`, { headers: { authorization: `Bearer ${reader}` } }), { params: Promise.resolve({ id: res.body.id }) })).json();
    expect(page.payloadTruncated).toBe(false);
    expect(Buffer.from(page.payloadBase64, "base64").equals(body)).toBe(true);
    expect(page.senderHeaders).toContainEqual({ name: "x-hub-signature-256", value: "sha256=abc123" });

    // The same payload in the JSON envelope (up to 1 MiB) is accepted as well, its bytes kept.
    const envelope = Buffer.concat([Buffer.from(`{"source":"${source}","eventId":"${uniq("gh")}","eventType":"push","error":"e","payload":`), body, Buffer.from("}")]);
    const viaEnvelope = await post(single, null, { key, raw: new Uint8Array(envelope) });
    expect(viaEnvelope.status).toBe(201);
    expect((await stored(viaEnvelope.body.id)).payload.equals(body)).toBe(true);
  });

  it("a forwarded Stripe event: id and type by JSON path, Keyward-* headers; the replay sends exactly those bytes with that content type", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const stripe = Buffer.from('{\n  "id": "evt_1Q2w3E4r5T6y",\n  "object": "event",\n  "type": "invoice.paid",\n  "data": {"object": {"amount_paid": 820982911946154508, "total": 200.0}}\n}');
    const form = Buffer.from("token=abc%2Fdef&team_id=T0001&text=caf%C3%A9");
    const a = await postRaw(key, {}, stripe, {
      "content-type": "application/json; charset=utf-8",
      "keyward-source": source,
      "keyward-event-id-from": "json:$.id",
      "keyward-event-type-from": "json:type",
      "keyward-error": "Zeitüberschreitung", // UTF-8 bytes in a header
      "stripe-signature": "t=1,v1=deadbeef",
    });
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    expect(a.body).toMatchObject({ eventId: "evt_1Q2w3E4r5T6y", eventType: "invoice.paid" });
    expect((await stored(a.body.id)).error).toBe("Zeitüberschreitung");
    const b = await postRaw(key, { source, eventId: "slack-1", eventType: "slash_command", error: "timeout" }, form, { "content-type": "application/x-www-form-urlencoded" });
    expect(b.status).toBe(201);

    const target = await capture();
    const secret = await readyForReplay(source, target.url);
    await replayAll(source);
    expect(target.received).toHaveLength(2);
    const got = (ct: string) => target.received.find((r) => r.headers["content-type"] === ct)!;
    // The provider's object, not a JSON string holding it; the signature verifies over exactly those bytes.
    expect(got("application/json; charset=utf-8").body.equals(stripe)).toBe(true);
    expect(got("application/x-www-form-urlencoded").body.equals(form)).toBe(true);
    const hook = got("application/json; charset=utf-8");
    expect(() => new Webhook(secret).verify(hook.body.toString(), hook.headers as Record<string, string>)).not.toThrow();
  });

  it("a UTF-8 BOM before a JSON body is dropped (the payload is the JSON text); before other types the bytes stay", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const json = Buffer.from('{"id":"evt_bom","n":1}');
    const a = await postRaw(key, { source, eventIdFrom: "json:id", eventType: "t", error: "e" }, Buffer.concat([bom, json]), { "content-type": "application/json" });
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    expect(a.body).toMatchObject({ eventId: "evt_bom", payloadBytes: json.length });
    expect((await stored(a.body.id)).payload.equals(json)).toBe(true);
    const text = Buffer.concat([bom, Buffer.from("hello")]);
    const b = await postRaw(key, { source, eventId: uniq("e"), eventType: "t", error: "e" }, text, { "content-type": "text/plain" });
    expect((await stored(b.body.id)).payload.equals(text)).toBe(true);
    // No Content-Type: stored as application/octet-stream, nothing guessed.
    const c = await postRaw(key, { source, eventId: uniq("e"), eventType: "t", error: "e" }, Buffer.from([0, 1, 2]));
    expect((await stored(c.body.id)).content_type).toBe("application/octet-stream");
  });

  it("422 naming the field for what cannot be read or used, 413 over KEYWARD_MAX_PAYLOAD_BYTES; nothing stored", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const json = { "content-type": "application/json" };
    const cases: [Record<string, string>, Record<string, string>, string, RegExp][] = [
      [{ source, eventType: "t", error: "e" }, json, "{}", /eventId: give eventId, or eventIdFrom/],
      [{ source, eventId: "a", eventIdFrom: "json:id", eventType: "t", error: "e" }, json, "{}", /eventId: give eventId, or eventIdFrom/],
      [{ source, eventIdFrom: "header:x-github-delivery", eventType: "t", error: "e" }, json, "{}", /eventIdFrom: the request has no x-github-delivery header/],
      [{ source, eventIdFrom: "json:$.id", eventType: "t", error: "e" }, { "content-type": "text/plain" }, "not json", /eventIdFrom: the body is not JSON, so json:id cannot be read/],
      [{ source, eventIdFrom: "json:$.data.id", eventType: "t", error: "e" }, json, '{"data":{}}', /eventIdFrom: the JSON body has no data.id/],
      [{ source, eventIdFrom: "json:id", eventType: "t", error: "e" }, json, '{"id":12345678901234567890}', /not an exact integer below 2\^53/],
      [{ source, eventIdFrom: "body:id", eventType: "t", error: "e" }, json, "{}", /eventIdFrom: must be header:<name>/],
      [{ source, eventId: "a", eventType: "t" }, json, "{}", /error:/],
      [{ source: "no-such-source-xyz", eventId: "a", eventType: "t", error: "e" }, json, "{}", /no-such-source-xyz/],
      [{ source, eventId: "a", eventType: "t", error: "e", surprise: "1" }, json, "{}", /surprise/],
      [{ source, eventId: "a", eventType: "t", error: "e" }, { ...json, "keyward-event-id": "b" }, "{}", /eventId: given as the query parameter eventId and as the header keyward-event-id, differently/],
      [{ source, eventId: "a", eventType: "t", error: "e" }, { "content-type": "not a type" }, "{}", /content-type: must be a media type/],
    ];
    for (const [query, headers, body, message] of cases) {
      const res = await postRaw(key, query, body, headers);
      expect(res.status, `${JSON.stringify(query)} ${JSON.stringify(res.body)}`).toBe(422);
      expect(res.body.error.message).toMatch(message);
    }
    const saved = process.env.KEYWARD_MAX_PAYLOAD_BYTES;
    process.env.KEYWARD_MAX_PAYLOAD_BYTES = "4096";
    try {
      const q = { source, eventId: "big", eventType: "t", error: "e" };
      expect((await postRaw(key, q, Buffer.alloc(4096, 0x61), { "content-type": "text/plain" })).status).toBe(201);
      const over = await postRaw(key, { ...q, eventId: "bigger" }, Buffer.alloc(4097, 0x61), { "content-type": "text/plain" });
      expect(over.status).toBe(413);
      expect(over.body.error.message).toMatch(/4096 bytes/);
    } finally {
      if (saved === undefined) delete process.env.KEYWARD_MAX_PAYLOAD_BYTES;
      else process.env.KEYWARD_MAX_PAYLOAD_BYTES = saved;
    }
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM dead_letters WHERE source = $1", [source]);
    expect(n).toBe(1);
    // Who may call it: deadletters:write or operator.
    expect((await postRaw((await makeApiKey(["read"])).key, { source, eventId: "x", eventType: "t", error: "e" }, "{}", json)).status).toBe(403);
  });

  it("6 MiB (the bench does 20): stored whole through staged chunks, the page shows its first part, the download and the replay are byte for byte", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write", "read"]);
    const size = 6 * 1024 * 1024;
    const body = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4) body.writeUInt32LE((i * 2654435761) >>> 0, i); // not compressible, every chunk different
    const res = await postRaw(key, { source, eventId: "evt_20mib", eventType: "blob.created", error: "too large for the consumer" }, body, {
      "content-type": "application/octet-stream",
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const [row] = await sql<{ ok: boolean; bytes: number }>("SELECT payload = $2 AS ok, payload_bytes AS bytes FROM dead_letters WHERE id = $1", [res.body.id, body]);
    expect(row).toEqual({ ok: true, bytes: size });
    const [{ left }] = await sql<{ left: number }>("SELECT count(*)::int AS left FROM payload_uploads");
    expect(left).toBe(0); // the staged chunks went with the statement that stored the letter

    const auth = { authorization: `Bearer ${key}` };
    const ctx = { params: Promise.resolve({ id: res.body.id }) };
    const page = await (await detail(new Request("http://localhost/x", { headers: auth }), ctx)).json();
    expect(page).toMatchObject({ payloadBytes: size, payloadTruncated: true, payloadText: null });
    expect(Buffer.from(page.payloadBase64, "base64").equals(body.subarray(0, PAYLOAD_PREVIEW_BYTES))).toBe(true);
    const file = await download(new Request("http://localhost/x", { headers: auth }), ctx);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-disposition")).toBe(`attachment; filename="dead-letter-${res.body.id}.bin"`);
    expect(file.headers.get("content-length")).toBe(String(size));
    expect(Buffer.from(await file.arrayBuffer()).equals(body)).toBe(true);

    const target = await capture();
    await readyForReplay(source, target.url);
    await replayAll(source);
    expect(target.received).toHaveLength(1);
    expect(target.received[0].body.equals(body)).toBe(true);
    expect(target.received[0].headers["content-type"]).toBe("application/octet-stream");
  }, 60_000);
});
