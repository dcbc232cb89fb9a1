/**
 * Every inlet kind under faults, mid-stream: a consumer process (consumer-child.ts: the server's consumer
 * job, without Next) reaches its broker and its database through TCP proxies; while failures flow in, the
 * broker connection is cut (connections reset, new ones refused) and healed, then the database is. In the
 * end the source holds exactly one dead letter per failed message, and nothing is left unacknowledged at
 * the broker (the queue empty; every failed job marked; the advisory work queue empty).
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import Redis from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { createInlet } from "@/lib/inlets/inlets";
import { TAKEN_FIELD } from "@/lib/inlets/kinds/bullmq";
import { createInletRequest } from "@/lib/inlets/schema";
import { makeSource, sql } from "@/test/setup/db";
import { makeFailingQueue, REDIS_URL } from "@/test/setup/bullmq";
import { makeNatsTopology, NATS_URL } from "@/test/setup/nats";
import { AMQP_URL, eventually, makeTopology } from "@/test/setup/rabbitmq";
import { ROOT } from "@/test/setup/server";
import { startTcpProxy, type TcpProxy } from "@/test/setup/tcp-proxy";

const N = 30;
const children: ChildProcess[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

/** A proxy to `url`'s host and port, and `url` with the proxy in its place. */
async function proxied(url: string, defaultPort: number): Promise<{ proxy: TcpProxy; url: string }> {
  const u = new URL(url);
  const proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || defaultPort) });
  cleanups.push(() => proxy.close());
  u.hostname = "127.0.0.1";
  u.port = String(proxy.port);
  return { proxy, url: u.toString() };
}

/**
 * The consumer process, its database reached through `databaseUrl`: `output` is the end of what it printed,
 * `lines(re)` how many of its lines so far match `re`.
 */
function startConsumer(inletId: string, databaseUrl: string): { child: ChildProcess; output: () => string; lines: (re: RegExp) => number } {
  const child = spawn(process.execPath, ["--require", path.join(ROOT, "bin/outside-next.cjs"), "--import", "tsx", path.join(ROOT, "test/inlets/consumer-child.ts"), inletId], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, KEYWARD_DB_CONNECT_TIMEOUT_MS: "1000", KEYWARD_DB_STATEMENT_TIMEOUT_MS: "2000" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return { child, output: () => out.slice(-3000), lines: (re) => out.split("\n").filter((l) => re.test(l)).length };
}

/** The consumer's log lines (lib/inlets/consumer.ts): its connection ended (or was refused); a batch it holds was not stored. */
const RECONNECTING = /; reconnecting$/;
const RETRYING = /: storing \d+ message\(s\) failed: /;

const count = async (source: string) =>
  (await sql<{ n: number; ids: number }>("SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS ids FROM dead_letters WHERE source = $1", [source]))[0];

type Kind = {
  /** Makes the broker side; answers the inlet request (its URL through `brokerUrl`), a way to fail messages, and a check that nothing is left. */
  setup(brokerUrl: (url: string, port: number) => Promise<string>): Promise<{
    request: Record<string, unknown>;
    fail(from: number, to: number): Promise<void>;
    drained(): Promise<boolean>;
  }>;
};

const KINDS: Record<string, Kind> = {
  amqp: {
    async setup(brokerUrl) {
      const t = await makeTopology({ ttlMs: 0 });
      cleanups.push(() => t.cleanup());
      return {
        request: { amqpUrl: await brokerUrl(AMQP_URL, 5672), queue: t.dlq, eventIdFrom: "header:x-event-id", prefetch: 10 },
        async fail(from, to) {
          for (let i = from; i < to; i++) t.publish("k", `{"n":${i}}`, { headers: { "x-event-id": `evt_${i}` } });
        },
        drained: async () => (await t.ch.checkQueue(t.dlq)).messageCount === 0,
      };
    },
  },
  bullmq: {
    async setup(brokerUrl) {
      const q = await makeFailingQueue();
      cleanups.push(() => q.cleanup());
      await q.add("warm-up", { ok: true });
      q.startWorker();
      const redis = new Redis(REDIS_URL);
      cleanups.push(async () => redis.disconnect());
      return {
        request: { kind: "bullmq", redisUrl: await brokerUrl(REDIS_URL, 6379), queue: q.name, eventIdFrom: "json:id", prefetch: 10 },
        async fail(from, to) {
          await q.queue.addBulk(Array.from({ length: to - from }, (_, j) => ({ name: "t", data: { id: `evt_${from + j}` } })));
        },
        async drained() {
          const ids = await q.queue.getFailed(0, -1);
          const marks = await Promise.all(ids.map((j) => redis.hexists(`bull:${q.name}:${j.id}`, TAKEN_FIELD)));
          return ids.length === N && marks.every((m) => m === 1);
        },
      };
    },
  },
  nats: {
    async setup(brokerUrl) {
      const t = await makeNatsTopology();
      let advisoryStream = "";
      cleanups.push(() => t.cleanup([advisoryStream]));
      return {
        request: { kind: "nats", natsUrl: await brokerUrl(NATS_URL, 4222), stream: t.stream, consumer: t.consumer, prefetch: 10 },
        async fail(from, to) {
          for (let i = from; i < to; i++) await t.publish(`{"n":${i}}`, { id: `evt_${i}` });
          await t.failAll(to - from);
        },
        async drained() {
          advisoryStream ||= (await t.jsm.streams.names().next()).find((s) => s.startsWith("KEYWARD_DLQ_") && s.includes(t.stream)) ?? "";
          return advisoryStream !== "" && (await t.jsm.streams.info(advisoryStream)).state.messages === 0;
        },
      };
    },
  },
};

describe("inlets under faults", () => {
  for (const [name, kind] of Object.entries(KINDS)) {
    it(`${name}: the broker connection, then the database, cut mid-stream: ${N} failed, ${N} stored, one per event, nothing left`, async () => {
      let broker: TcpProxy | undefined;
      const side = await kind.setup(async (url, port) => {
        const p = await proxied(url, port);
        broker = p.proxy;
        return p.url;
      });
      const db = await proxied(process.env.DATABASE_URL!, 5432);
      const source = await makeSource();
      const inlet = await createInlet(source, parseInput(createInletRequest, side.request), cliPrincipal());
      const consumer = startConsumer(inlet.id, db.url);

      await side.fail(0, N / 3);
      await eventually(async () => ((await count(source)).n >= N / 6 ? true : undefined), `some letters\n${consumer.output()}`, 40_000);
      const reconnects = consumer.lines(RECONNECTING);
      broker!.setMode("refuse");
      await side.fail(N / 3, (2 * N) / 3); // they wait at the broker
      // The consumer lost its connection, and a new one was refused: the outage is real to it.
      await eventually(async () => (consumer.lines(RECONNECTING) >= reconnects + 2 ? true : undefined), `the cut seen and a reconnection refused\n${consumer.output()}`, 40_000);
      broker!.setMode("forward");
      // Every message that waited at the broker stored: the consumer is connected again before the database goes.
      await eventually(async () => ((await count(source)).n >= (2 * N) / 3 ? true : undefined), `letters after the broker came back\n${consumer.output()}`, 40_000);

      const retries = consumer.lines(RETRYING);
      db.proxy.setMode("refuse");
      await side.fail((2 * N) / 3, N); // taken while the database is down: held unacknowledged
      await eventually(async () => (consumer.lines(RETRYING) > retries ? true : undefined), `a batch taken and not stored\n${consumer.output()}`, 40_000);
      db.proxy.setMode("forward");

      await eventually(async () => ((await count(source)).n >= N ? true : undefined), `all ${N} letters\n${consumer.output()}`, 60_000);
      await eventually(async () => ((await side.drained()) ? true : undefined), `nothing left at the broker\n${consumer.output()}`, 40_000);
      consumer.child.kill("SIGTERM");
      expect(await new Promise((r) => consumer.child.once("exit", r))).toBe(0);
      expect(await count(source)).toEqual({ n: N, ids: N });
      const [{ audited }] = await sql<{ audited: number }>("SELECT count(*)::int AS audited FROM audit_events WHERE kind = 'dead_lettered' AND source = $1", [source]);
      expect(audited).toBe(N);
      expect(consumer.output()).toMatch(/reconnecting|retrying/);
    }, 150_000);
  }
});
