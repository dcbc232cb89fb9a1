/** `keyward inlet add/list/remove` as a user runs it (a child process on this run's database and the real RabbitMQ). */
import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { makeSource, sql } from "@/test/setup/db";
import { AMQP_URL, makeTopology, type Topology } from "@/test/setup/rabbitmq";
import { makeFailingQueue, REDIS_URL } from "@/test/setup/bullmq";
import { makeNatsTopology, NATS_URL } from "@/test/setup/nats";

const BIN = path.resolve(import.meta.dirname, "../../bin/keyward.cjs");
let topology: Topology | undefined;

afterAll(async () => {
  await topology?.cleanup();
});

function keyward(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: process.env, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe("keyward inlet", { timeout: 240_000 }, () => {
  it("adds (checking the queue), lists with the password masked, removes; bad input exits 1 with the reason", async () => {
    topology = await makeTopology();
    const source = await makeSource();
    const password = new URL(AMQP_URL).password;

    const missing = await keyward("inlet", "add", source, "--amqp-url", AMQP_URL, "--queue", `${topology.dlq}.nope`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`queue "${topology.dlq}.nope" not found`);
    const badFrom = await keyward("inlet", "add", source, "--amqp-url", AMQP_URL, "--queue", topology.dlq, "--event-id-from", "body:id");
    expect(badFrom.code).toBe(1);
    expect(badFrom.stderr).toMatch(/--event-id-from.*must be one of header:<name>/s);

    // The URL from a file keeps the password off the command line.
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), "kw-inlet-")), "url");
    writeFileSync(file, `${AMQP_URL}\n`);
    const added = await keyward("inlet", "add", source, "--amqp-url-file", file, "--queue", topology.dlq, "--event-id-from", "json:data.id", "--prefetch", "20");
    expect(added.stderr).toBe("");
    expect(added.code).toBe(0);
    const id = /added amqp inlet ([0-9a-f-]{36})/.exec(added.stdout)?.[1];
    expect(id).toBeDefined();
    expect(added.stdout).not.toContain(`:${password}@`);

    const list = await keyward("inlet", "list", "--source", source);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+SOURCE\s+KIND\s+QUEUE\s+URL\s+EVENT ID FROM\s+STATE\s+LAG\s+CONSUMED/);
    expect(list.stdout).toContain(id!);
    expect(list.stdout).toContain(":***@");
    expect(list.stdout).not.toContain(`:${password}@`);
    const json = JSON.parse((await keyward("inlet", "list", "--source", source, "--json")).stdout);
    expect(json).toEqual([expect.objectContaining({ id, source, queue: topology.dlq, eventIdFrom: "json:data.id", prefetch: 20, state: "starting" })]);

    const again = await keyward("inlet", "add", source, "--amqp-url", AMQP_URL, "--queue", topology.dlq);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already has an inlet/);

    const removed = await keyward("inlet", "remove", id!);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain(`removed inlet ${id}`);
    expect((await keyward("inlet", "remove", id!)).stderr).toContain(`no inlet ${id}`);
    const actions = await sql<{ action: string; actor: string }>(
      "SELECT detail->>'action' AS action, actor FROM audit_events WHERE kind = 'operator' AND source = $1 ORDER BY at, id",
      [source],
    );
    expect(actions.map((a) => a.action)).toEqual(["inlet.create", "inlet.remove"]);
    expect(actions[0].actor).toMatch(/^cli:/);
  });

  it("adds a BullMQ and a NATS inlet from their flags (checked), each listed with its kind", async () => {
    const q = await makeFailingQueue();
    const t = await makeNatsTopology();
    try {
      await q.add("warm-up", { ok: true });
      const source = await makeSource();
      const bull = await keyward("inlet", "add", source, "--redis-url", REDIS_URL, "--bullmq-queue", q.name, "--event-id-from", "json:$.id");
      expect(bull.stderr).toBe("");
      expect(bull.stdout).toMatch(new RegExp(`added bullmq inlet [0-9a-f-]{36}: ${q.name} at redis://127\\.0\\.0\\.1:6379`));
      const noHeaders = await keyward("inlet", "add", source, "--redis-url", REDIS_URL, "--bullmq-queue", q.name, "--event-id-from", "header:x");
      expect(noHeaders.code).toBe(1);
      expect(noHeaders.stderr).toMatch(/a BullMQ job has no headers/);
      const nats = await keyward("inlet", "add", source, "--nats-url", NATS_URL, "--nats-stream", t.stream, "--nats-consumer", t.consumer);
      expect(nats.stderr).toBe("");
      expect(nats.stdout).toContain(`added nats inlet`);
      const json = JSON.parse((await keyward("inlet", "list", "--source", source, "--json")).stdout) as { kind: string; queue: string; eventIdFrom: string; settings: { advisoryStream?: string } }[];
      expect(json.map((i) => [i.kind, i.queue, i.eventIdFrom])).toEqual([
        ["bullmq", q.name, "json:$.id"],
        ["nats", `${t.stream}/${t.consumer}`, "header:Nats-Msg-Id"],
      ]);
      await t.cleanup([json[1].settings.advisoryStream!]);
    } finally {
      await q.cleanup();
      await t.cleanup();
    }
  });
});
