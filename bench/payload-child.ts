/**
 * The process whose memory bench/payload-memory.ts measures: `tsx payload-child.ts <mode> <source> <destination>`,
 * DATABASE_URL from the environment. It serves POST /api/v1/dead-letters/raw on a free port, prints
 * `ready <port>` on stdout and `request <status> <rss peak> <js peak>` after each request it answered (from the
 * request's arrival to its answer's end; js: V8's heap in use plus buffers); on stdin, `gc` collects garbage
 * and prints `rest <rss> <js>`, `replay <letter id>` sends that letter to <destination> and prints
 * `sent <status> <rss peak> <js peak>`,
 * `exit` prints `maxrss <bytes>` (the process's high-water mark) and exits.
 *
 * Modes: `keyward` is the server's own path (the fast path's handler: the body read into one buffer,
 * staged in 1 MiB chunks, the replay reading it back chunk by chunk); `whole` is the path this replaced,
 * kept here as the baseline: the body collected as chunks and concatenated, one INSERT with the payload as
 * an element of a bytea[] parameter, one SELECT of the whole payload, the same HTTP send.
 */
import { z } from "zod";
import http from "node:http";
import type { AddressInfo } from "node:net";
import readline from "node:readline";
import { matchFastRoute, serveFast } from "@/lib/server/fast-routes";
import { query } from "@/lib/db/sql";
import { readPayload } from "@/lib/deadletters/payload-store";
import { replayHeaders } from "@/lib/replay/deliver";
import { sendHttp } from "@/lib/replay/send-http";

const [mode, source, destination] = process.argv.slice(2);
const SECRET = `whsec_${Buffer.alloc(24, 7).toString("base64")}`;

/** Memory now: resident, and what JavaScript holds (V8's heap in use plus buffers outside it). */
function usage(): { rss: number; js: number } {
  const m = process.memoryUsage();
  return { rss: m.rss, js: m.heapUsed + m.external };
}

/** Samples usage() every 2 ms until stopped; answers the highest of each ("rss js"). */
function sampler(): { stop(): string } {
  const peak = usage();
  const take = () => {
    const u = usage();
    peak.rss = Math.max(peak.rss, u.rss);
    peak.js = Math.max(peak.js, u.js);
  };
  const timer = setInterval(take, 2);
  return {
    stop() {
      clearInterval(timer);
      take();
      return `${peak.rss} ${peak.js}`;
    },
  };
}

/** The baseline intake: chunks concatenated, the whole payload in one bytea[] parameter. */
async function storeWhole(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const eventId = new URL(req.url ?? "/", "http://x").searchParams.get("eventId") ?? "x";
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  const [row] = await query(
    z.object({ id: z.string() }),
    `INSERT INTO dead_letters (source, event_id, event_type, payload, payload_bytes, content_type, error, failed_at)
     SELECT $1, $2, 't', p, length(p), 'application/octet-stream', 'e', now() FROM unnest($3::bytea[]) AS u(p) RETURNING id`,
    [source, eventId, [body]],
  );
  res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ id: row.id }));
}

// Each request's RSS peak, from its arrival to the end of its answer.
const server = http.createServer((req, res) => {
  const peak = sampler();
  res.on("finish", () => console.log(`request ${res.statusCode} ${peak.stop()}`));
  if (mode === "whole") return void storeWhole(req, res);
  const match = matchFastRoute(req.method, req.url);
  if (!match) return void res.writeHead(404).end();
  void serveFast(match, req, res);
});
server.listen(0, "127.0.0.1", () => console.log(`ready ${(server.address() as AddressInfo).port}`));

async function replay(id: string): Promise<number | null> {
  const body =
    mode === "whole"
      ? (await query(z.object({ payload: z.instanceof(Buffer) }), "SELECT payload FROM dead_letters WHERE id = $1", [id]))[0].payload
      : await readPayload(id);
  if (!body) throw new Error(`no letter ${id}`);
  const headers = replayHeaders({ eventId: id, replayId: "bench", contentType: "application/octet-stream", body, secret: SECRET });
  const r = await sendHttp({ replayId: "bench", deadLetterId: id, eventId: id, attempt: 1 }, destination, headers, body, new AbortController().signal);
  return r.status;
}

const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const [cmd, arg] = line.trim().split(" ");
  void (async () => {
    if (cmd === "gc") {
      (globalThis as { gc?: () => void }).gc?.();
      const u = usage();
      console.log(`rest ${u.rss} ${u.js}`);
    } else if (cmd === "replay") {
      const peak = sampler();
      const status = await replay(arg);
      console.log(`sent ${status} ${peak.stop()}`);
    } else if (cmd === "exit") {
      console.log(`maxrss ${process.resourceUsage().maxRSS * 1024}`);
      process.exit(0);
    }
  })().catch((err) => {
    console.log(`error ${(err as Error).message}`);
    process.exit(1);
  });
});
