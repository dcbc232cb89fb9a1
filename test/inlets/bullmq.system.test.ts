/**
 * The BullMQ inlet against the machine's Redis and a real BullMQ Worker that fails its jobs: a job that
 * reached `failed` after its last attempt becomes a dead letter with its data byte for byte (the JSON text
 * BullMQ stored), id, name, failedReason, attempts, stack trace and timestamps; a job still being retried
 * is not taken; each failure is taken once (marked in BullMQ, the inlet's position moved past it), a job
 * retried by hand that fails again is taken again; a failure stored but not marked (a crash between commit
 * and mark) is stored once; the lag is reported; a job whose data is over KEYWARD_MAX_PAYLOAD_BYTES is kept
 * without it, unidentified with the reason, and taken once. Each test has its own queue (obliterated) and source.
 */
import Redis from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { recordInletLetters } from "@/lib/deadletters/intake";
import { getDeadLetter } from "@/lib/deadletters/list";
import { parseInput } from "@/lib/http/validate";
import { startInletConsumers, type InletConsumers } from "@/lib/inlets/consumers";
import { createInlet, listInlets, loadInletConfigs } from "@/lib/inlets/inlets";
import { failedJobOf, letterFromJob, TAKEN_FIELD } from "@/lib/inlets/kinds/bullmq";
import { createInletRequest, parseEventIdFrom } from "@/lib/inlets/schema";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { readyForReplay } from "@/test/setup/replay";
import { startReplayRequest } from "@/lib/replay/schema";
import { startReplayWorker } from "@/lib/replay/executor";
import { createPreflight } from "@/lib/replay/preflight";
import { getReplay, startReplay } from "@/lib/replay/replays";
import { listAttempts } from "@/lib/replay/attempt-list";
import { listAttemptsQuery } from "@/lib/replay/schema";
import { closeBullmqQueues, replayJobId, sendBullmq } from "@/lib/replay/bullmq-publish";
import { makeFailingQueue, REDIS_URL, type FailingQueue } from "@/test/setup/bullmq";
import { eventually } from "@/test/setup/rabbitmq";
import { reportsAgain } from "@/test/setup/inlets";
import { timePasses } from "@/test/setup/time";

const ADMIN = cliPrincipal();
const queues: FailingQueue[] = [];
const consumers: InletConsumers[] = [];
const redis = new Redis(REDIS_URL);

afterEach(async () => {
  for (const c of consumers.splice(0)) await c.stop();
});
afterAll(async () => {
  for (const q of queues) await q.cleanup();
  redis.disconnect();
});

async function setup(eventIdFrom?: string) {
  const q = await makeFailingQueue();
  queues.push(q);
  await q.queue.waitUntilReady();
  await q.add("warm-up", { ok: true }); // the queue exists (its keys) before the inlet's check
  const source = await makeSource();
  const inlet = await createInlet(
    source,
    parseInput(createInletRequest, { kind: "bullmq", redisUrl: REDIS_URL, queue: q.name, prefetch: 5, ...(eventIdFrom ? { eventIdFrom } : {}) }),
    ADMIN,
  );
  return { q, source, inlet };
}

function consume(inletId: string): InletConsumers {
  const c = startInletConsumers({ only: [inletId], pollMs: 100, log: () => {} });
  consumers.push(c);
  return c;
}

type Row = { id: string; event_id: string; event_type: string; payload: Buffer; error: string; attempts: number; failed_at: Date; status: string; origin: Record<string, unknown> };
const letters = (source: string) =>
  sql<Row>("SELECT id, event_id, event_type, payload, error, attempts, failed_at, status, origin FROM dead_letters WHERE source = $1 ORDER BY failed_at, event_id", [source]);
const stored = (source: string, n: number) =>
  eventually(async () => {
    const rows = await letters(source);
    return rows.length >= n ? rows : undefined;
  }, `${n} dead letters of ${source}`);

describe("BullMQ inlet", () => {
  it("takes each job that failed its last attempt: data byte for byte, id, name, reason, attempts, stack trace, times; marks it", async () => {
    const { q, source, inlet } = await setup();
    q.startWorker();
    const data = { id: "evt_1", amount: "820982911946154508", note: "Zoë 東京 \u2028", nested: { x: [1, 2.5, null] } };
    await q.add("invoice.paid", data, { jobId: "evt-1", attempts: 2 });
    await q.add("invoice.paid", { id: "evt_2" }, { jobId: "evt-2" });
    await q.waitForFailed(2);
    consume(inlet.id);
    const rows = await stored(source, 2);
    const raw = await redis.hgetBuffer(`bull:${q.name}:evt-1`, "data");
    const a = rows.find((r) => r.event_id === "evt-1")!;
    expect(a.payload.equals(raw!)).toBe(true); // the JSON text BullMQ wrote, not a re-serialization
    expect(JSON.parse(a.payload.toString())).toEqual(data);
    expect(a).toMatchObject({ event_type: "invoice.paid", error: "boom 2", attempts: 2, status: "pending" });
    expect(a.origin).toMatchObject({ kind: "bullmq", queue: q.name, prefix: "bull", jobId: "evt-1", name: "invoice.paid", failedReason: "boom 2", attemptsMade: 2 });
    expect((a.origin.stacktrace as string[]).length).toBe(2);
    expect(a.origin.stacktrace as string[]).toEqual(expect.arrayContaining([expect.stringContaining("Error: boom 1")]));
    expect(a.failed_at.getTime()).toBe(a.origin.finishedOn);
    expect(a.origin.processedOn).toEqual(expect.any(Number));
    expect(a.origin.timestamp).toEqual(expect.any(Number));
    // Marked in BullMQ, and the job stays in its failed set.
    const mark = JSON.parse((await redis.hget(`bull:${q.name}:evt-1`, TAKEN_FIELD))!);
    expect(mark).toMatchObject({ inlet: inlet.id, finishedOn: a.origin.finishedOn });
    expect(await q.queue.getFailedCount()).toBe(2);
    const detail = await getDeadLetter(a.id);
    expect(detail.origin).toMatchObject({ kind: "bullmq", jobId: "evt-1" });
    const [audit] = await sql<{ actor: string }>("SELECT actor FROM audit_events WHERE kind = 'dead_lettered' AND source = $1 AND event_id = 'evt-1'", [source]);
    expect(audit.actor).toBe(`inlet:${inlet.id}`);

    // Taken once: more passes store nothing more; the lag says nothing is waiting.
    await eventually(async () => {
      const [i] = await listInlets(source);
      return i.consumed === 2 && i.lag.messages === 0 && i.state === "consuming" ? i : undefined;
    }, "the lag report");
    expect((await letters(source)).length).toBe(2);

    // A job retried by hand that fails again is a new failure: taken again.
    const job = await q.queue.getJob("evt-2");
    await job!.retry();
    const again = await stored(source, 3);
    expect(again.filter((r) => r.event_id === "evt-2")).toHaveLength(2);
  });

  it("does not take a job while it is still being retried; reads the event id from the data by JSON path; keeps an unusable one as unidentified", async () => {
    const { q, source, inlet } = await setup("json:$.order.id");
    consume(inlet.id);
    await q.add("order.created", { order: { id: "ord_9" } }, { attempts: 3, backoff: { type: "fixed", delay: 1500 } });
    await q.add("order.created", { order: {} });
    q.startWorker();
    const first = await stored(source, 1);
    expect(first.map((r) => r.status)).toEqual(["unidentified"]); // the retried one is not failed yet
    const rows = await stored(source, 2);
    const byStatus = Object.fromEntries(rows.map((r) => [r.status, r]));
    expect(byStatus.pending).toMatchObject({ event_id: "ord_9", attempts: 3, error: "boom 3" });
    const [u] = await sql<{ unidentified_reason: string }>("SELECT unidentified_reason FROM dead_letters WHERE id = $1", [byStatus.unidentified.id]);
    expect(u.unidentified_reason).toBe("the job's data has no order.id");
  }, 40_000);

  it("stores once a failure that was stored but not marked (a crash between commit and mark), then marks it", async () => {
    const { q, source, inlet } = await setup();
    q.startWorker();
    await q.add("t", { n: 1 }, { jobId: "once-1" });
    await q.waitForFailed(1);
    const [config] = await loadInletConfigs([inlet.id]);
    const from = parseEventIdFrom(config.eventIdFrom, "bullmq");
    if (!from.ok) throw new Error(from.error);
    const score = Number(await redis.zscore(`bull:${q.name}:failed`, "once-1"));
    const job = failedJobOf("once-1", score, await redis.hgetallBuffer(`bull:${q.name}:once-1`))!;
    expect(await recordInletLetters([letterFromJob(job, config, from.value)], "test")).toEqual([expect.any(String)]);
    expect(await redis.hget(`bull:${q.name}:once-1`, TAKEN_FIELD)).toBeNull();
    consume(inlet.id);
    await eventually(async () => ((await redis.hget(`bull:${q.name}:once-1`, TAKEN_FIELD)) ? true : undefined), "the mark");
    expect((await letters(source)).map((r) => r.event_id)).toEqual(["once-1"]);
    expect((await listInlets(source))[0].consumed).toBe(0); // the repeat is not counted
  });

  it("takes a job that landed in the failed set behind one already taken (its worker's clock was behind), once", async () => {
    const { q, source, inlet } = await setup();
    q.startWorker();
    await q.add("t", { n: 1 }, { jobId: "late-b" });
    await q.waitForFailed(1);
    const c = consume(inlet.id);
    await stored(source, 1);
    await eventually(async () => ((await redis.hget(`bull:${q.name}:late-b`, TAKEN_FIELD)) ? true : undefined), "late-b marked");
    await c.stop();
    // late-a failed after late-b was taken, but its worker scored it 2 s earlier than late-b.
    await q.add("t", { n: 2 }, { jobId: "late-a" });
    await q.waitForFailed(2);
    const failed = `bull:${q.name}:failed`;
    const earlier = Number(await redis.zscore(failed, "late-b")) - 2000;
    await redis.zadd(failed, earlier, "late-a");
    await redis.hset(`bull:${q.name}:late-a`, "finishedOn", String(earlier));
    consume(inlet.id);
    const rows = await stored(source, 2);
    expect(rows.map((r) => r.event_id)).toEqual(["late-a", "late-b"]);
    const mark = JSON.parse((await redis.hget(`bull:${q.name}:late-a`, TAKEN_FIELD))!);
    expect(mark).toMatchObject({ inlet: inlet.id, finishedOn: earlier });
    // Further passes take neither again.
    await timePasses(1000, "ten of the consumer's passes over the failed set (pollMs 100): one that took late-a or late-b again would store it");
    await reportsAgain(inlet.id);
    expect((await letters(source)).map((r) => r.event_id)).toEqual(["late-a", "late-b"]);
  });

  it("replays to BullMQ: the job re-added with its name and its data byte for byte, job id from the dead letter, once when retried", async () => {
    const { q, source, inlet } = await setup();
    q.startWorker();
    await q.add("invoice.paid", { id: "evt_r", total: 200.5, note: "é" }, { jobId: "evt-r" });
    await q.waitForFailed(1);
    consume(inlet.id);
    const [letter] = await stored(source, 1);
    await consumers.pop()!.stop();
    await readyForReplay(source, REDIS_URL.replace(/^redis:/, "bullmq:"));
    const pf = await createPreflight({ source }, ADMIN);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 100 }), uniq("k"), ADMIN);
    const w = startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: 5000, log: () => {}, sources: () => [source] });
    try {
      await eventually(async () => ((await getReplay(replayId)).status === "completed" ? true : undefined), "the replay to complete");
    } finally {
      await w.stop();
    }
    expect((await getReplay(replayId)).counts.delivered).toBe(1);
    const jobKey = `bull:${q.name}:${replayJobId(letter.id)}`;
    expect((await redis.hgetBuffer(jobKey, "data"))!.equals(letter.payload)).toBe(true);
    expect(await redis.hget(jobKey, "name")).toBe("invoice.paid");
    // The job id Redis answered is the attempt's evidence (the dead-letter page's "Received" and response).
    const [attempt] = (await listAttempts(letter.id, parseInput(listAttemptsQuery, {}))).items;
    expect(attempt.responseHeaders).toEqual([
      ["bullmq-job-id", replayJobId(letter.id)],
      ["bullmq-queue", q.name],
      ["bullmq-job-name", "invoice.paid"],
      ["bullmq-prefix", "bull"],
    ]);
    expect(attempt.responseBody).toBe(`job ${replayJobId(letter.id)} added to queue "${q.name}"`);
    // A second send of the same item (a retry Keyward made) finds the job there: still one job.
    const again = await sendBullmq({ replayId, deadLetterId: letter.id, eventId: letter.event_id, attempt: 2 }, `bullmq://127.0.0.1:6379?queue=${q.name}`, {}, letter.payload, new AbortController().signal);
    expect(again).toMatchObject({ ok: true, responseHeaders: expect.arrayContaining([["bullmq-job-id", replayJobId(letter.id)]]) });
    const added = (await redis.keys(`bull:${q.name}:keyward-*`)).filter((k) => !k.includes(":logs"));
    expect(added).toEqual([jobKey]);
    const notJson = await sendBullmq({ replayId, deadLetterId: letter.id, eventId: "x", attempt: 1 }, `bullmq://127.0.0.1:6379?queue=${q.name}`, {}, Buffer.from("a=1"), new AbortController().signal);
    expect(notJson).toMatchObject({ ok: false, retryable: false, error: expect.stringMatching(/not JSON/) });
    await closeBullmqQueues();
  }, 40_000);

  it("keeps a failed job whose data is over KEYWARD_MAX_PAYLOAD_BYTES without its body, unidentified with the reason; takes it once", async () => {
    const { q, source, inlet } = await setup();
    q.startWorker();
    const big = { id: "evt_big", blob: "x".repeat(2000) };
    await q.add("invoice.paid", big, { jobId: "big-1" });
    await q.add("invoice.paid", { id: "evt_small" }, { jobId: "small-1" });
    await q.waitForFailed(2);
    const rawSize = (await redis.hgetBuffer(`bull:${q.name}:big-1`, "data"))!.length;
    const saved = process.env.KEYWARD_MAX_PAYLOAD_BYTES;
    process.env.KEYWARD_MAX_PAYLOAD_BYTES = "1024"; // read by the consumer when it connects
    try {
      consume(inlet.id);
      const rows = await stored(source, 2);
      const b = rows.find((r) => r.status === "unidentified")!;
      expect(b.payload.length).toBe(0);
      expect(b.event_id).toMatch(/^unidentified:[0-9a-f]{32}$/);
      expect(b).toMatchObject({ event_type: "invoice.paid", error: "boom 1", origin: expect.objectContaining({ jobId: "big-1" }) });
      expect((await getDeadLetter(b.id)).unidentifiedReason).toBe(`the job's data is ${rawSize} bytes, over KEYWARD_MAX_PAYLOAD_BYTES (1024): it was not stored`);
      // The limit is the body's: a small job of the same queue is stored whole.
      expect(rows.find((r) => r.event_id === "small-1")!.payload.toString()).toBe('{"id":"evt_small"}');
      // Taken once: marked in BullMQ, nothing waiting, and further passes store nothing more.
      const mark = await eventually(async () => (await redis.hget(`bull:${q.name}:big-1`, TAKEN_FIELD)) ?? undefined, "the mark");
      expect(JSON.parse(mark)).toMatchObject({ inlet: inlet.id });
      await eventually(async () => {
        const [i] = await listInlets(source);
        return i.consumed === 2 && i.lag.messages === 0 ? i : undefined;
      }, "the lag report");
      await timePasses(500, "five more of the consumer's passes over the failed set (pollMs 100): one that took a job again would store it");
      await reportsAgain(inlet.id);
      expect((await letters(source)).length).toBe(2);
      expect((await listInlets(source))[0].consumed).toBe(2);
    } finally {
      if (saved === undefined) delete process.env.KEYWARD_MAX_PAYLOAD_BYTES;
      else process.env.KEYWARD_MAX_PAYLOAD_BYTES = saved;
    }
  });

  it("checks the queue before saving: a missing queue or a wrong URL is a 422 naming why", async () => {
    const source = await makeSource();
    const missing = createInlet(source, parseInput(createInletRequest, { kind: "bullmq", redisUrl: REDIS_URL, queue: "no-such-queue-kw" }), ADMIN);
    await expect(missing).rejects.toMatchObject({ status: 422, code: "inlet_unreachable", message: expect.stringMatching(/BullMQ queue "no-such-queue-kw" not found/) });
    const refused = createInlet(source, parseInput(createInletRequest, { kind: "bullmq", redisUrl: "redis://:secretpw@127.0.0.1:9", queue: "q" }), ADMIN);
    await expect(refused).rejects.toMatchObject({ status: 422, message: expect.not.stringContaining("secretpw") });
    expect(() => parseInput(createInletRequest, { kind: "bullmq", redisUrl: REDIS_URL, queue: "q", eventIdFrom: "header:x" })).toThrow(/a BullMQ job has no headers/);
    expect(() => parseInput(createInletRequest, { kind: "bullmq", redisUrl: REDIS_URL })).toThrow(/queue: is required for a bullmq inlet/);
    expect(() => parseInput(createInletRequest, { kind: "bullmq", amqpUrl: "amqp://h/", redisUrl: REDIS_URL, queue: "q" })).toThrow(/amqpUrl: is not a field of a bullmq inlet/);
  });
});
