/**
 * The machine's Redis for the BullMQ inlet and replay tests (TEST_REDIS_URL, default redis://127.0.0.1:6379).
 * Every test makes queues of its own under unique names, with a real BullMQ Worker that fails its jobs,
 * and obliterates them afterwards.
 */
import { Queue, Worker, type Job, type JobsOptions } from "bullmq";
import { vi } from "vitest";
import { uniq } from "./db";

export const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

const connectionOf = (url: string) => {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379), password: u.password || undefined, maxRetriesPerRequest: null };
};

export type FailingQueue = {
  name: string;
  queue: Queue;
  /** Adds a job that the worker will fail on each attempt (with `attempts`, default 1). */
  add(name: string, data: unknown, opts?: JobsOptions): Promise<Job>;
  /** Starts the worker that throws `boom <attempt>` for every job whose data has no `ok: true`. */
  startWorker(): Worker;
  /** Waits until the failed set holds `n` jobs. */
  waitForFailed(n: number, timeoutMs?: number): Promise<void>;
  cleanup(): Promise<void>;
};

export async function makeFailingQueue(url = REDIS_URL): Promise<FailingQueue> {
  const name = uniq("kwq");
  const connection = connectionOf(url);
  const queue = new Queue(name, { connection });
  const workers: Worker[] = [];
  return {
    name,
    queue,
    add: (jobName, data, opts) => queue.add(jobName, data, { attempts: 1, backoff: { type: "fixed", delay: 0 }, ...opts }),
    startWorker() {
      const w = new Worker(
        name,
        async (job) => {
          if ((job.data as { ok?: boolean })?.ok) return "done";
          throw new Error(`boom ${job.attemptsMade + 1}`);
        },
        { connection, concurrency: 10 },
      );
      w.on("error", () => {});
      workers.push(w);
      return w;
    },
    async waitForFailed(n, timeoutMs = 20_000) {
      await vi.waitFor(
        async () => {
          const count = await queue.getFailedCount();
          if (count < n) throw new Error(`${name} has ${count} failed jobs, expected ${n}`);
        },
        { timeout: timeoutMs, interval: 25 },
      );
    },
    async cleanup() {
      for (const w of workers) await w.close().catch(() => {});
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close().catch(() => {});
    },
  };
}
