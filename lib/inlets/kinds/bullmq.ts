/**
 * The BullMQ inlet kind: takes the jobs of a queue that reached `failed` after their last attempt (BullMQ
 * moves a job to its failed set only then: a job it will retry waits in `delayed` or `wait`). Reads Redis
 * directly (ioredis), BullMQ's own layout: the failed set `<prefix>:<queue>:failed` (scored by finishedOn,
 * ms) and each job's hash `<prefix>:<queue>:<id>`, whose `data` field is the JSON text the producer's
 * BullMQ wrote: stored byte for byte.
 *
 * A pass (a job of the consumer's registry, every `pollMs`) reads the failed set oldest first from the
 * inlet's position, at most `prefetch` jobs, delivers them as letters and waits until the consumer stored
 * them. Acknowledging a job is marking it in BullMQ (the hash field `keyward:taken`: the inlet, the
 * letter's time and the failure's finishedOn) and moving the inlet's position past it: so each failure is
 * taken once, a job retried by hand that fails again (a new finishedOn) is taken again, and a job taken
 * before a crash between commit and mark is read again, skipped as a repeat (its identity: queue, id,
 * finishedOn, attempts), and marked. The lag is the number of failed jobs past the position.
 *
 * A job's score is its worker's clock when it failed, so a job can land in the failed set after one scored
 * later was taken (workers in parallel, a stalled event loop, clocks a little apart). Each pass therefore also
 * looks LOOKBACK_MS behind the position and takes any job there that this inlet has not marked; only its mark
 * is read for the rest (one pipelined HGET each). A job landing further behind than that is not taken.
 *
 * Failed jobs stay in BullMQ (its removeOnFail policy decides when they go): keep them at least as long
 * as Keyward may be down, or a job removed before its pass is never taken.
 */
import { createHash } from "node:crypto";
import Redis from "ioredis";
import { eventId as eventIdSchema, eventType as eventTypeSchema } from "@/lib/claims/schema";
import { identifierOf, readJsonPath } from "@/lib/deadletters/json-path";
import { MAX_ERROR_CHARS } from "@/lib/deadletters/schema";
import { storableRepresentation } from "@/lib/http/fields";
import { inletPosition, saveInletPosition } from "@/lib/inlets/position";
import type { InletLetter } from "@/lib/inlets/message";
import type { EventIdFrom, InletSettings } from "@/lib/inlets/schema";
import type { Delivery, InletKindImpl, InletLink, LinkContext } from "./link";

export const CONNECT_TIMEOUT_MS = 5000;
export const TAKEN_FIELD = "keyward:taken";
export const DEFAULT_EVENT_TYPE = "bullmq.job";
/** How far behind its position (in failed-set score, ms) a pass looks for a job that landed late. */
export const LOOKBACK_MS = 60_000;

/** A Redis connection that fails fast and never reconnects by itself (the consumer reconnects with backoff). */
export function redisClient(url: string, name: string): Redis {
  const r = new Redis(url, {
    connectionName: name,
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: 10_000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  r.on("error", () => {}); // reported through the command that failed, or the 'end' event
  return r;
}

/** A short reason for a Redis failure, never carrying the URL's password. */
export function describeRedisError(err: unknown, url: string): string {
  const e = err as { code?: string; message?: string };
  const host = (() => {
    try {
      return new URL(url).host;
    } catch {
      return "Redis";
    }
  })();
  if (e?.code === "ECONNREFUSED") return `connection refused by ${host}`;
  if (e?.code === "ENOTFOUND" || e?.code === "EAI_AGAIN") return `host not found: ${host}`;
  const raw = String(e?.message ?? err);
  if (/WRONGPASS|NOAUTH|invalid password|invalid username/i.test(raw)) return `login refused by ${host}: check the user and password`;
  if (/timed? ?out|ETIMEDOUT/i.test(raw)) return `no answer from ${host} (timeout)`;
  let password = "";
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    /* keep "" */
  }
  const text = password.length >= 3 ? raw.split(password).join("***") : raw;
  return text.length > 500 ? `${text.slice(0, 499)}…` : text;
}

const keys = (settings: InletSettings, queue: string) => {
  const base = `${settings.prefix ?? "bull"}:${queue}`;
  return { failed: `${base}:failed`, job: (id: string) => `${base}:${id}`, meta: `${base}:meta`, id: `${base}:id` };
};

/** A failed job as read from its hash (every field as BullMQ wrote it). */
export type FailedJob = {
  id: string;
  score: number;
  name: string;
  data: Buffer;
  failedReason: string;
  stacktrace: string[];
  attemptsMade: number;
  timestamp: number | null;
  processedOn: number | null;
  finishedOn: number;
  taken: string | null;
};

const num = (b: Buffer | undefined): number | null => {
  if (!b) return null;
  const n = Number(b.toString());
  return Number.isFinite(n) ? n : null;
};

function stacktraceOf(b: Buffer | undefined): string[] {
  if (!b) return [];
  try {
    const v: unknown = JSON.parse(b.toString("utf8"));
    return Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : [];
  } catch {
    return [];
  }
}

/** A job hash (HGETALL as buffers) → FailedJob; null when the hash is gone. Pure. */
export function failedJobOf(id: string, score: number, h: Record<string, Buffer>): FailedJob | null {
  if (!h || Object.keys(h).length === 0) return null;
  return {
    id,
    score,
    name: h.name?.toString("utf8") ?? "",
    data: h.data ?? Buffer.from("{}"),
    failedReason: h.failedReason?.toString("utf8") ?? "",
    stacktrace: stacktraceOf(h.stacktrace),
    attemptsMade: num(h.atm) ?? num(h.attemptsMade) ?? 0,
    timestamp: num(h.timestamp),
    processedOn: num(h.processedOn),
    finishedOn: num(h.finishedOn) ?? score,
    taken: h[TAKEN_FIELD]?.toString("utf8") ?? null,
  };
}

const storable = (s: string) => storableRepresentation(s);

/** The dead letter a failed job becomes. Pure. */
export function letterFromJob(
  job: FailedJob,
  inlet: { id: string; source: string; queue: string; settings: InletSettings },
  from: EventIdFrom,
  maxPayloadBytes = Infinity,
): InletLetter {
  const oversize = job.data.length > maxPayloadBytes;
  let found: { ok: true; eventId: string } | { ok: false; reason: string };
  if (oversize) found = { ok: false, reason: `the job's data is ${job.data.length} bytes, over KEYWARD_MAX_PAYLOAD_BYTES (${maxPayloadBytes}): it was not stored` };
  else if (from.kind === "property") found = { ok: true, eventId: job.id };
  else if (from.kind === "json") {
    const where = `json:${from.path.join(".")}`;
    const r = readJsonPath(job.data, from.path);
    if (!r.ok) found = { ok: false, reason: r.reason === "not_json" ? `the job's data is not JSON, so ${where} cannot be read` : `the job's data has no ${from.path.join(".")}` };
    else {
      const id = identifierOf(r.value, where);
      found = id.ok ? { ok: true, eventId: id.id } : { ok: false, reason: id.reason };
    }
  } else found = { ok: false, reason: "a BullMQ job has no headers" };
  if (found.ok) {
    const valid = eventIdSchema.safeParse(found.eventId);
    if (!valid.success) found = { ok: false, reason: `the event id at ${from.kind === "json" ? `json:${from.path.join(".")}` : "property:job_id"} is not usable: ${valid.error.issues[0].message}` };
  }
  const prefix = inlet.settings.prefix ?? "bull";
  const originKey = createHash("sha256")
    .update(JSON.stringify([inlet.source, "bullmq", prefix, inlet.queue, job.id, job.finishedOn, job.attemptsMade]))
    .digest("hex");
  const error = storable(job.failedReason || `failed in BullMQ queue ${inlet.queue} (no failedReason)`);
  return {
    source: inlet.source,
    inletId: inlet.id,
    eventId: found.ok ? found.eventId : `unidentified:${originKey.slice(0, 32)}`,
    eventType: eventTypeSchema.safeParse(job.name).success ? job.name : DEFAULT_EVENT_TYPE,
    payload: oversize ? Buffer.alloc(0) : job.data,
    contentType: "application/json",
    error: error.length > MAX_ERROR_CHARS ? `${error.slice(0, MAX_ERROR_CHARS - 1)}…` : error,
    attempts: Math.min(job.attemptsMade, 1_000_000),
    failedAt: new Date(job.finishedOn).toISOString(),
    queue: storable(inlet.queue).slice(0, 255),
    originExchange: null,
    originRoutingKey: null,
    originKey,
    unidentifiedReason: found.ok ? null : storable(found.reason),
    origin: {
      kind: "bullmq",
      queue: inlet.queue,
      prefix,
      jobId: job.id,
      name: job.name,
      failedReason: job.failedReason,
      attemptsMade: job.attemptsMade,
      stacktrace: job.stacktrace.slice(0, 20).map((s) => s.slice(0, 4000)),
      timestamp: job.timestamp,
      processedOn: job.processedOn,
      finishedOn: job.finishedOn,
    },
  };
}

/** Marks a job as taken, unless it was removed meanwhile (an HSET alone would recreate a stray hash). */
const MARK_SCRIPT = "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end return 0";

/** "<score> <id>" ⇄ its parts; the failed set is ordered by score, then by member. */
export const positionText = (score: number, id: string) => `${score} ${id}`;
export function parsePosition(text: string | null): { score: number; id: string } | null {
  const m = text === null ? null : /^(-?\d+(?:\.\d+)?) (.+)$/s.exec(text);
  return m ? { score: Number(m[1]), id: m[2] } : null;
}
const after = (p: { score: number; id: string } | null, score: number, id: string) =>
  !p || score > p.score || (score === p.score && id > p.id);

/** Whether a job's `keyward:taken` mark says this inlet took this failure (its finishedOn) already. */
function takenHere(mark: string | null, inletId: string, finishedOn: number): boolean {
  if (!mark) return false;
  const taken = JSON.parse(mark) as { inlet?: string; finishedOn?: number };
  return taken.inlet === inletId && taken.finishedOn === finishedOn;
}

export const bullmqKind: InletKindImpl = {
  async check({ url, queue, settings }) {
    const r = redisClient(url, "keyward check");
    try {
      await r.connect();
      const k = keys(settings, queue);
      if ((await r.exists(k.meta, k.id, k.failed)) === 0) {
        throw new Error(`BullMQ queue "${queue}" not found (no ${settings.prefix ?? "bull"}:${queue}:meta, :id or :failed key)`);
      }
    } catch (err) {
      throw new Error((err as Error).message.startsWith("BullMQ queue") ? (err as Error).message : describeRedisError(err, url), { cause: err });
    } finally {
      r.disconnect();
    }
  },

  async connect(ctx: LinkContext): Promise<InletLink> {
    const { url, queue, settings, prefetch, id: inletId } = ctx.config;
    const k = keys(settings, queue);
    const r = redisClient(url, `keyward inlet ${inletId}`);
    let closing = false;
    let end!: (reason: string | null) => void;
    const ended = new Promise<string | null>((resolve) => (end = resolve));
    let lastError: string | null = null;
    r.on("error", (err: Error) => (lastError = describeRedisError(err, url)));
    r.on("end", () => end(closing ? null : (lastError ?? "the connection to Redis closed")));
    try {
      await r.connect();
    } catch (err) {
      r.disconnect();
      throw new Error(describeRedisError(err, url), { cause: err });
    }
    let position = parsePosition(await inletPosition(inletId));
    let stopped = false;

    /** One pass: up to `prefetch` failed jobs past the position, delivered and waited for. */
    async function pass(): Promise<void> {
      if (stopped) return;
      const batch: { job: FailedJob; delivery?: Delivery }[] = [];
      let offset = 0;
      const page = prefetch + 50;
      while (batch.length < prefetch) {
        const raw = await r.zrangebyscore(k.failed, position ? position.score - LOOKBACK_MS : "-inf", "+inf", "WITHSCORES", "LIMIT", offset, page);
        if (raw.length === 0) break;
        // Behind the position, only a job this inlet has not marked is read whole (one that landed late).
        const behind: number[] = [];
        for (let i = 0; i < raw.length; i += 2) if (!after(position, Number(raw[i + 1]), raw[i])) behind.push(i);
        const marks = new Map<number, string | null>();
        if (behind.length > 0) {
          const got = (await r.pipeline(behind.map((i) => ["hget", k.job(raw[i]), TAKEN_FIELD])).exec()) ?? [];
          behind.forEach((i, n) => {
            const [err, value] = got[n] ?? [null, null];
            if (err) throw err;
            marks.set(i, value as string | null);
          });
        }
        for (let i = 0; i < raw.length && batch.length < prefetch; i += 2) {
          const id = raw[i];
          const score = Number(raw[i + 1]);
          const late = marks.has(i);
          if (late && takenHere(marks.get(i) ?? null, inletId, score)) continue;
          const job = failedJobOf(id, score, await r.hgetallBuffer(k.job(id)));
          if (!job) {
            if (!late) batch.push({ job: { id, score } as FailedJob }); // removed meanwhile: only moves the position
            continue;
          }
          if (takenHere(job.taken, inletId, job.finishedOn)) {
            if (!late) batch.push({ job }); // taken before: only moves the position
            continue;
          }
          batch.push({ job, delivery: { letter: letterFromJob(job, ctx.config, ctx.from, ctx.maxPayloadBytes), handle: job } });
        }
        if (raw.length < page * 2) break;
        offset += page;
      }
      if (batch.length === 0) return;
      const deliveries = batch.flatMap((b) => (b.delivery ? [b.delivery] : []));
      await ctx.deliver(deliveries);
      // Delivered ones move the position in ack(); a batch of only skipped ones moves it here.
      if (deliveries.length === 0 && !stopped) {
        const last = batch[batch.length - 1].job;
        position = { score: last.score, id: last.id };
        await saveInletPosition(inletId, positionText(last.score, last.id));
      }
    }

    return {
      ended,
      jobs: [{ name: "failed jobs", everyMs: ctx.pollMs, run: pass }],
      async lag() {
        return r.zcount(k.failed, position ? `(${position.score}` : "-inf", "+inf");
      },
      async ack(batch: Delivery[]) {
        if (batch.length === 0) return;
        const multi = r.multi();
        const at = new Date().toISOString();
        for (const d of batch) {
          const job = d.handle as FailedJob;
          multi.eval(MARK_SCRIPT, 1, k.job(job.id), TAKEN_FIELD, JSON.stringify({ inlet: inletId, at, finishedOn: job.finishedOn }));
        }
        await multi.exec();
        const last = batch[batch.length - 1].handle as FailedJob;
        if (after(position, last.score, last.id)) {
          position = { score: last.score, id: last.id };
          await saveInletPosition(inletId, positionText(last.score, last.id));
        }
      },
      async stop() {
        stopped = true;
      },
      async close() {
        closing = true;
        stopped = true;
        end(null);
        r.disconnect();
      },
    };
  },
};
