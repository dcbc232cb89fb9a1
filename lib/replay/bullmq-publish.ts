/**
 * The BullMQ replay target (issue 26): a source whose replay destination is `bullmq://…` (or `bullmqs://`
 * for Redis over TLS) gets each replayed event re-added as a BullMQ job instead of POSTed. The executor
 * (drive.ts) sends each item through the "send one item" seam (send.ts); the preflight, the re-check just
 * before the send, the rate, the retries and the audit are the executor's, as for HTTP.
 *
 * Destination: `bullmq[s]://[user:password@]host[:port][/db]?queue=<name>[&prefix=bull][&name=<job name>]`.
 * Without `queue`, the letter's own BullMQ queue (a letter from a BullMQ inlet); without `name`, the job's
 * original name (else the event type).
 *
 * The job: that name, the payload's bytes as its data, exactly (BullMQ keeps a job's data as JSON text:
 * the stored text is handed to it as is, never parsed and re-serialized; a payload that is not JSON text
 * fails, not retryable), and the job id `keyward-<dead letter id>`: BullMQ adds a job whose id exists
 * only once, so a replay retried by Keyward (a lost answer, a worker that died) adds it once. BullMQ jobs
 * carry no headers: the Standard Webhooks signature does not travel; the job id says it is a replay.
 * Outcomes: added (or there already) → ok; Redis unreachable, a timeout → failed, retryable; no queue
 * known, a bad URL, a payload that is not JSON → failed, not retryable. Queues are shared per destination
 * and closed after CONNECTION_IDLE_MS unused.
 */
import "server-only";
import { z } from "zod";
import { Job, Queue } from "bullmq";
import { query } from "@/lib/db/sql";
import { letterOriginSchema } from "@/lib/deadletters/schema";
import { readJsonPath } from "@/lib/deadletters/json-path";
import { describeRedisError } from "@/lib/inlets/kinds/bullmq";
import { brokerAnswer, DeliveryTimeout, type SendOne, type SendResult } from "./send";
import { MAX_ERROR_LENGTH } from "./send-http";

export const CONNECTION_IDLE_MS = 30_000;
/** The job id a replay of this dead letter gets. */
export const replayJobId = (deadLetterId: string) => `keyward-${deadLetterId}`;

/** A job's data handed over as the JSON text it already is. */
class RawData {
  constructor(readonly text: string) {}
}

/** A Job whose data, when RawData, is stored as its text exactly (BullMQ would JSON.stringify it). */
class RawDataJob extends Job {
  asJSON() {
    const json = super.asJSON();
    return this.data instanceof RawData ? { ...json, data: this.data.text } : json;
  }
}

/** A Queue that creates RawDataJobs (BullMQ's own extension point: QueueBase's Job getter). */
class RawDataQueue extends Queue {
  get Job(): typeof Job {
    // RawDataJob only overrides asJSON; its generic construct signature is Job's.
    return RawDataJob as unknown as typeof Job;
  }
}

export type BullmqTarget = { connectUrl: string; tls: boolean; queue: string | null; prefix: string; name: string | null; db: number };

/** Parses a bullmq(s):// destination. Throws on a malformed one. Pure. */
export function parseBullmqTarget(destination: string): BullmqTarget {
  const u = new URL(destination);
  if (!/^bullmqs?:$/.test(u.protocol)) throw new Error("not a bullmq:// URL");
  const tls = u.protocol === "bullmqs:";
  const db = u.pathname.replace(/^\//, "");
  if (db && !/^\d+$/.test(db)) throw new Error("the path must be a Redis database number");
  const auth = u.username || u.password ? `${u.username}:${u.password}@` : "";
  return {
    connectUrl: `${tls ? "rediss" : "redis"}://${auth}${u.host}/${db || "0"}`,
    tls,
    queue: u.searchParams.get("queue"),
    prefix: u.searchParams.get("prefix") ?? "bull",
    name: u.searchParams.get("name"),
    db: Number(db || 0),
  };
}

type Pooled = { queue: RawDataQueue; idle: NodeJS.Timeout | null; users: number };
const pool = new Map<string, Pooled>();

function acquire(t: BullmqTarget, queueName: string): { key: string; pooled: Pooled } {
  const key = JSON.stringify([t.connectUrl, t.prefix, queueName]);
  let p = pool.get(key);
  if (!p) {
    const u = new URL(t.connectUrl);
    const queue = new RawDataQueue(queueName, {
      prefix: t.prefix,
      connection: {
        host: u.hostname,
        port: Number(u.port || 6379),
        username: decodeURIComponent(u.username) || undefined,
        password: decodeURIComponent(u.password) || undefined,
        db: t.db,
        ...(t.tls ? { tls: {} } : {}),
        connectTimeout: 5000,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: true,
      },
    });
    queue.on("error", () => {}); // each add reports its own failure
    p = { queue, idle: null, users: 0 };
    pool.set(key, p);
  }
  if (p.idle) clearTimeout(p.idle);
  p.idle = null;
  p.users++;
  return { key, pooled: p };
}

function release(key: string, p: Pooled): void {
  p.users--;
  if (p.users > 0) return;
  p.idle = setTimeout(() => {
    if (pool.get(key) !== p || p.users > 0) return;
    pool.delete(key);
    void p.queue.close().catch(() => {});
  }, CONNECTION_IDLE_MS);
  p.idle.unref();
}

/** Closes every pooled queue (shutdown, tests). */
export async function closeBullmqQueues(): Promise<void> {
  const all = [...pool.values()];
  pool.clear();
  await Promise.all(all.map((p) => p.queue.close().catch(() => {})));
}

const clip = (e: string) => (e.length > MAX_ERROR_LENGTH ? `${e.slice(0, MAX_ERROR_LENGTH - 1)}…` : e);

export const sendBullmq: SendOne = async (item, destination, _headers, body, signal): Promise<SendResult> => {
  const started = performance.now();
  const result = (ok: boolean, retryable: boolean, error: string | null): SendResult => ({
    ok,
    retryable,
    status: null,
    error: error === null ? null : clip(error),
    latencyMs: Math.round(performance.now() - started),
    responseBody: null,
  });
  let target: BullmqTarget;
  try {
    target = parseBullmqTarget(destination);
  } catch (err) {
    return result(false, false, `destination is not a valid bullmq:// URL: ${(err as Error).message}`);
  }
  const [letter] = await query(z.object({ origin: letterOriginSchema.nullable(), event_type: z.string() }), "SELECT origin, event_type FROM dead_letters WHERE id = $1::uuid", [
    item.deadLetterId,
  ]);
  const origin = letter?.origin?.kind === "bullmq" ? letter.origin : null;
  const queueName = target.queue ?? origin?.queue ?? null;
  if (!queueName) return result(false, false, "no queue to add the job to: this dead letter did not come through a BullMQ inlet; add ?queue=… to the destination");
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  let text: string;
  try {
    // ignoreBOM false, on purpose: a leading byte order mark is dropped, because the worker JSON.parses the job's
    // data and JSON.parse refuses one. Every other byte is sent as stored.
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return result(false, false, "the payload is not UTF-8 text, and a BullMQ job's data is JSON text");
  }
  // Only checks that it is one JSON value (a job's data is parsed by its worker); the text is sent as is.
  if (!readJsonPath(bytes, []).ok) return result(false, false, "the payload is not JSON, and a BullMQ job's data is JSON text");
  const name = target.name ?? origin?.name ?? letter?.event_type ?? "replayed";
  if (signal.aborted) return result(false, true, signal.reason instanceof DeliveryTimeout ? signal.reason.message : "aborted");
  const { key, pooled } = acquire(target, queueName);
  try {
    const add = pooled.queue.add(name, new RawData(text), { jobId: replayJobId(item.deadLetterId) });
    const aborted = new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    const job = await Promise.race([add, aborted]);
    // Redis answered the add with the job's id: ours (replayJobId), so a second add of the same letter is the same job.
    return {
      ...result(true, false, null),
      ...brokerAnswer(
        [["bullmq-job-id", job.id], ["bullmq-queue", queueName], ["bullmq-job-name", name], ["bullmq-prefix", target.prefix]],
        `job ${job.id ?? "(no id)"} added to queue "${queueName}"`,
      ),
    };
  } catch (err) {
    if (signal.aborted) return result(false, true, signal.reason instanceof DeliveryTimeout ? signal.reason.message : "aborted");
    return result(false, true, `adding the job failed: ${describeRedisError(err, target.connectUrl)}`);
  } finally {
    release(key, pooled);
  }
};
