/**
 * Kill the consumer mid-stream, and nothing is lost or stored twice: N messages are dead-lettered into
 * the inlet's queue, a consumer process (consumer-child.ts: the server's consumer job, without Next) is
 * SIGKILLed while it stores them, and a new one is started. In the end the queue is empty and the source
 * holds exactly N dead letters, one per event id. A message the killed process stored but had not
 * acknowledged comes back from RabbitMQ and is recognised as a repeat (consumer.test.ts shows that case on
 * its own, deterministically).
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { createInletRequest } from "@/lib/inlets/schema";
import { createInlet } from "@/lib/inlets/inlets";
import { makeSource, sql } from "@/test/setup/db";
import { AMQP_URL, eventually, makeTopology, type Topology } from "@/test/setup/rabbitmq";
import { ROOT } from "@/test/setup/server";

const N = 400;
const children: ChildProcess[] = [];
let topology: Topology | undefined;

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await topology?.cleanup();
});

function startConsumer(inletId: string): { child: ChildProcess; output: () => string } {
  // tsx as a loader in this very process (tsx's CLI would stand between the signal and the consumer).
  const child = spawn(process.execPath, ["--require", path.join(ROOT, "bin/outside-next.cjs"), "--import", "tsx", path.join(ROOT, "test/inlets/consumer-child.ts"), inletId], {
    cwd: ROOT,
    env: process.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return { child, output: () => out };
}

const count = async (source: string) =>
  (await sql<{ n: number; ids: number }>("SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS ids FROM dead_letters WHERE source = $1", [source]))[0];

describe("a consumer killed mid-stream", () => {
  it(`loses nothing and stores nothing twice: ${N} published, ${N} stored, one per event`, async () => {
    topology = await makeTopology({ ttlMs: 0 });
    const t = topology;
    const source = await makeSource();
    const inlet = await createInlet(source, parseInput(createInletRequest, { amqpUrl: AMQP_URL, queue: t.dlq, eventIdFrom: "header:x-event-id", prefetch: 10 }), cliPrincipal());
    for (let i = 0; i < N; i++) t.publish("order.created", `{"n":${i}}`, { headers: { "x-event-id": `evt_${i}` }, contentType: "application/json" });
    await t.waitForDepth(t.dlq, N);

    const first = startConsumer(inlet.id);
    const partial = await eventually(async () => {
      const c = await count(source);
      return c.n >= N / 8 ? c.n : undefined;
    }, `the first consumer to store some letters\n${first.output()}`, 60_000);
    first.child.kill("SIGKILL");
    await new Promise((r) => first.child.once("exit", r));
    const atKill = (await count(source)).n;
    console.log(`killed with ${atKill} of ${N} letters stored`);
    expect(partial).toBeGreaterThan(0);
    // Killed mid-stream: some letters were still in the queue (stored ones may also be there, unacknowledged).
    expect(atKill).toBeLessThan(N);

    const second = startConsumer(inlet.id);
    await eventually(async () => ((await count(source)).n >= N ? true : undefined), `all ${N} letters\n${second.output()}`, 90_000);
    await t.waitForDepth(t.dlq, 0, 30_000);
    // A clean stop: once it has exited, nothing can be held unacknowledged any more, so an empty queue
    // means every message was acknowledged.
    second.child.kill("SIGTERM");
    expect(await new Promise((r) => second.child.once("exit", r))).toBe(0);
    await t.waitForDepth(t.dlq, 0, 30_000);
    const final = await count(source);
    expect(final).toEqual({ n: N, ids: N });
    const [check] = await sql<{ min: number; max: number; audited: number }>(
      `SELECT min((convert_from(payload, 'UTF8')::json->>'n')::int) AS min, max((convert_from(payload, 'UTF8')::json->>'n')::int) AS max,
              (SELECT count(*)::int FROM audit_events WHERE kind = 'dead_lettered' AND source = $1) AS audited
       FROM dead_letters WHERE source = $1`,
      [source],
    );
    expect(check).toEqual({ min: 0, max: N - 1, audited: N });
  }, 180_000);
});
