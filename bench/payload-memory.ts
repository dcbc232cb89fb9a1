/**
 * Memory of a large payload (`BENCH_PARTS=payload npm run bench`, issue 26): a 20 MiB body through the raw
 * intake (POST /api/v1/dead-letters/raw, served by the fast path's handler in a process of its own,
 * bench/payload-child.ts) and then its replay to an HTTP receiver, byte for byte (the receiver checks the
 * SHA-256). What is measured is that process's resident memory: its peak during the request and during the
 * replay, above its resident memory at rest just before (after a warm-up of the same path at 64 KiB and a
 * full garbage collection), as a multiple of the payload size; and its lifetime high-water mark (maxrss).
 *
 * Baseline, measured in the same run: the path this replaced (mode `whole`: the body concatenated from its
 * chunks, the payload inside one bytea[] parameter, read back with one SELECT). Knob: BENCH_PAYLOAD_MIB (20).
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import readline from "node:readline";
import { createApiKey } from "@/lib/auth/api-keys";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { createSourceRequest } from "@/lib/sources/schema";
import { createSource } from "@/lib/sources/sources";

const MIB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_PAYLOAD_MIB ?? 20) * MIB;
const ROOT = path.resolve(__dirname, "..");

/** Peaks above the memory at rest just before, × the payload: resident memory (rss) and what JavaScript holds (js). */
export type Peak = { rss: number; js: number };
export type PayloadMemoryRow = { mode: "keyward" | "whole"; restMiB: number; intake: Peak; replay: Peak; maxX: number; delivered: boolean };
export type PayloadMemoryResult = { sizeMiB: number; rows: PayloadMemoryRow[]; when: string };

/** A receiver that hashes each body as it streams in and answers 200. */
async function receiver(): Promise<{ url: string; hashes: string[]; close: () => Promise<void> }> {
  const hashes: string[] = [];
  const server = http.createServer((req, res) => {
    const h = createHash("sha256");
    req.on("data", (c: Buffer) => h.update(c));
    req.on("end", () => {
      hashes.push(h.digest("hex"));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, hashes, close: () => new Promise((r) => server.close(() => r())) };
}

/** One child process of `mode`: warm-up, rest, the 20 MiB intake and replay; its peaks above rest. */
async function measure(mode: "keyward" | "whole", source: string, key: string, body: Buffer, sink: Awaited<ReturnType<typeof receiver>>): Promise<PayloadMemoryRow> {
  const child = spawn(process.execPath, ["--expose-gc", "--require", path.join(ROOT, "bin/outside-next.cjs"), "--import", "tsx", path.join(ROOT, "bench/payload-child.ts"), mode, source, sink.url], {
    cwd: ROOT,
    // The baseline's one statement of 20 MiB (as bytea[] text) can take longer than the default 5 s on a busy machine.
    env: { ...process.env, KEYWARD_DB_STATEMENT_TIMEOUT_MS: "60000" },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = readline.createInterface({ input: child.stdout! });
  const waiting: ((line: string) => void)[] = [];
  const buffered: string[] = [];
  lines.on("line", (l) => (waiting.length ? waiting.shift()!(l) : buffered.push(l)));
  const next = (prefix: string) =>
    new Promise<string[]>((resolve, reject) => {
      const take = (l: string) => (l.startsWith(`${prefix} `) ? resolve(l.split(" ").slice(1)) : l.startsWith("error") ? reject(new Error(l)) : waiting.unshift(take));
      if (buffered.length) take(buffered.shift()!);
      else waiting.push(take);
    });
  const say = (line: string) => child.stdin!.write(`${line}\n`);
  try {
    const [port] = await next("ready");
    const intake = async (payload: Buffer, eventId: string) => {
      const q = new URLSearchParams({ source, eventId, eventType: "blob.created", error: "too large" });
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/dead-letters/raw?${q}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/octet-stream" },
        body: new Uint8Array(payload.buffer as ArrayBuffer, payload.byteOffset, payload.length),
      });
      if (res.status !== 201) throw new Error(`intake answered ${res.status}: ${await res.text()}`);
      const { id } = (await res.json()) as { id: string };
      const [, rss, js] = await next("request");
      return { id, peak: { rss: Number(rss), js: Number(js) } };
    };
    const replay = async (id: string) => {
      say(`replay ${id}`);
      const [status, rss, js] = await next("sent");
      if (status !== "200") throw new Error(`replay answered ${status}`);
      return { rss: Number(rss), js: Number(js) };
    };
    const rest = async () => {
      say("gc");
      const [rss, js] = await next("rest");
      return { rss: Number(rss), js: Number(js) };
    };
    const above = (peak: Peak, at: Peak): Peak => ({ rss: (peak.rss - at.rss) / body.length, js: (peak.js - at.js) / body.length });
    const warm = await intake(body.subarray(0, 64 * 1024), `warm-${mode}`);
    await replay(warm.id);
    const beforeIntake = await rest();
    const big = await intake(body, `big-${mode}`);
    const beforeReplay = await rest();
    const replayPeak = await replay(big.id);
    say("exit");
    const max = Number((await next("maxrss"))[0]);
    const hash = createHash("sha256").update(body).digest("hex");
    return {
      mode,
      restMiB: beforeIntake.rss / MIB,
      intake: above(big.peak, beforeIntake),
      replay: above(replayPeak, beforeReplay),
      maxX: (max - beforeIntake.rss) / body.length,
      delivered: sink.hashes.includes(hash),
    };
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

export async function benchPayloadMemory(log: (msg: string) => void): Promise<PayloadMemoryResult> {
  const name = `payload-${Date.now().toString(36)}`;
  await createSource(parseInput(createSourceRequest, { name, retryWindowSeconds: 86400, queueLagSeconds: 0, clockSkewSeconds: 0, replaySeconds: 0 }), cliPrincipal());
  const { key } = await createApiKey({ name, scopes: ["deadletters:write"] }, cliPrincipal());
  const body = Buffer.allocUnsafe(SIZE);
  for (let i = 0; i + 4 <= SIZE; i += 4) body.writeUInt32LE((i * 2654435761) >>> 0, i);
  const sink = await receiver();
  try {
    const rows: PayloadMemoryRow[] = [];
    for (const mode of ["whole", "keyward"] as const) {
      log(`payload memory: ${mode}, ${SIZE / MIB} MiB`);
      rows.push(await measure(mode, name, key, body, sink));
    }
    return { sizeMiB: SIZE / MIB, rows, when: new Date().toISOString().replace(/\.\d+Z$/, "Z") };
  } finally {
    await sink.close();
  }
}

const LABEL = { keyward: "Keyward (one buffer, staged 1 MiB chunks, chunked read)", whole: "baseline: whole payload per statement" };

export function payloadText(r: PayloadMemoryResult): string {
  const lines = [`Payload memory, ${r.sizeMiB} MiB through the raw intake and its replay (peak RSS above rest, × payload):`];
  for (const row of r.rows) {
    lines.push(
      `  ${LABEL[row.mode].padEnd(58)} intake rss ${row.intake.rss.toFixed(2)}× js ${row.intake.js.toFixed(2)}×  replay rss ${row.replay.rss.toFixed(2)}× js ${row.replay.js.toFixed(2)}×  maxrss ${row.maxX.toFixed(2)}×  (rest ${row.restMiB.toFixed(0)} MiB, delivered byte for byte: ${row.delivered})`,
    );
  }
  return lines.join("\n");
}

export const PAYLOAD_START = "<!-- payload: written by bench/payload-memory.ts -->";
export const PAYLOAD_END = "<!-- /payload -->";

export function payloadMarkdown(r: PayloadMemoryResult, when: string): string {
  const rows = r.rows.map(
    (row) =>
      `| ${LABEL[row.mode]} | ${row.intake.rss.toFixed(2)}× / ${row.intake.js.toFixed(2)}× | ${row.replay.rss.toFixed(2)}× / ${row.replay.js.toFixed(2)}× | ${row.maxX.toFixed(2)}× | ${row.restMiB.toFixed(0)} MiB | ${row.delivered ? "yes" : "**no**"} |`,
  );
  return [
    PAYLOAD_START,
    "## Large payloads: memory of a 20 MiB intake and replay",
    "",
    `${when}. bench/payload-memory.ts: a ${r.sizeMiB} MiB body through POST /api/v1/dead-letters/raw (the fast path's handler, in a`,
    "process of its own) and its replay to an HTTP receiver that checks its SHA-256. Peak memory of that process above its memory",
    "at rest just before each phase (after a 64 KiB warm-up and a full GC), as a multiple of the payload size: resident (rss) /",
    "held by JavaScript (V8 heap in use + buffers); maxrss: the process's high-water mark above rest. Aim: < 3× per request.",
    "The baseline is the path this replaced, in the same run: the body concatenated from its chunks, the payload in one",
    "bytea[] parameter, read back whole by one SELECT.",
    "",
    "| path | intake peak rss / js | replay peak rss / js | process maxrss | at rest | delivered |",
    "|---|---|---|---|---|---|",
    ...rows,
    PAYLOAD_END,
  ].join("\n");
}
