/**
 * The replay executor: a worker inside `keyward start` (KEYWARD_REPLAY_WORKER, on by default) that drives
 * running replays to the end. All state is in the database, so a restarted server resumes where the
 * previous one stopped.
 *
 * What it does, every KEYWARD_REPLAY_POLL_MS (and at once when this process starts or resumes a replay,
 * wake.ts):
 *   1. settles the leftovers of cancelled replays (items a dead worker left in delivery, once their leases
 *      lapsed) as cancelled;
 *   2. takes up to MAX_REPLAYS_PER_WORKER running replays that no other live worker drives (a lease on the
 *      replay row, `FOR UPDATE SKIP LOCKED`; a dead worker's lease lapses after KEYWARD_REPLAY_LEASE_SECONDS),
 *      so each replay has one driver at a time and its rate limit holds across instances;
 *   3. drives each one (drive.ts: batches leased, re-checked and settled one statement each; sends with
 *      `concurrency` in flight and `ratePerSecond` starts per second) until it is completed, paused,
 *      cancelled or taken over.
 * How it bounds its work: at most MAX_REPLAYS_PER_WORKER replays at a time, batches of at most BATCH_MAX
 * items; a stop (server shutdown) aborts deliveries in flight, gives their items back to pending and gives
 * the replays' leases back.
 */
import "server-only";
import { z } from "zod";
import { setMaxListeners } from "node:events";
import os from "node:os";
import { randomBytes } from "node:crypto";
import { loadEnv } from "@/lib/config/env";
import { startJobs } from "@/lib/jobs/registry";
import { execute, query } from "@/lib/db/sql";
import { driveReplay } from "./drive";
import { ReplayRow, WORKER_ACTOR } from "./feed";
import { CANCEL_ITEMS_SQL } from "./replays";
import { onReplayWake } from "./wake";
import { CANCELLED_LEFTOVERS_SQL, TAKE_REPLAYS_SQL } from "./worker-sql";

export const MAX_REPLAYS_PER_WORKER = 4;
const POLL_JOB = "replay worker";

export type WorkerOptions = {
  /** Poll interval (default KEYWARD_REPLAY_POLL_MS). */
  pollMs?: number;
  /** Replay and item lease (default KEYWARD_REPLAY_LEASE_SECONDS). */
  leaseSeconds?: number;
  /** Per-delivery timeout (default KEYWARD_REPLAY_TIMEOUT_MS). */
  timeoutMs?: number;
  /** How old the pre-send re-check's facts may be at a send (default feed.ts RECHECK_MAX_AGE_MS). */
  recheckMaxAgeMs?: number;
  workerId?: string;
  log?: (msg: string) => void;
  /**
   * Drive only the replays of these sources (read at each poll). For tests: their files run side by side
   * on one database, and a worker of one file must not take another file's replays.
   */
  sources?: () => readonly string[];
};

export type ReplayWorker = { id: string; stop(): Promise<void>; /** Resolves once nothing is being driven. */ idle(): Promise<void> };

/** Starts the worker; `stop()` aborts deliveries in flight, puts their items back and gives leases back. */
export function startReplayWorker(options: WorkerOptions = {}): ReplayWorker {
  const env = loadEnv();
  const pollMs = options.pollMs ?? env.KEYWARD_REPLAY_POLL_MS;
  const leaseSeconds = options.leaseSeconds ?? env.KEYWARD_REPLAY_LEASE_SECONDS;
  const timeoutMs = options.timeoutMs ?? env.KEYWARD_REPLAY_TIMEOUT_MS;
  const workerId = options.workerId ?? `${os.hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  const log = options.log ?? ((m: string) => console.error(`[keyward] ${m}`));
  const abort = new AbortController();
  // Every delivery in flight listens to it (up to MAX_REPLAYS_PER_WORKER × 32): no leak, no warning.
  setMaxListeners(0, abort.signal);
  const drivers = new Map<string, Promise<void>>();
  const drive = { workerId, leaseSeconds, timeoutMs, pollMs, signal: abort.signal, log, recheckMaxAgeMs: options.recheckMaxAgeMs };

  async function tick(): Promise<void> {
    for (const c of await query(z.object({ id: z.string() }), CANCELLED_LEFTOVERS_SQL)) await execute(`${CANCEL_ITEMS_SQL} SELECT 1`, [c.id, WORKER_ACTOR]);
    const room = MAX_REPLAYS_PER_WORKER - drivers.size;
    if (room <= 0 || abort.signal.aborted) return;
    const taken = await query(ReplayRow, TAKE_REPLAYS_SQL, [workerId, leaseSeconds, [...drivers.keys()], room, options.sources?.() ?? null]);
    for (const r of taken) {
      const d = driveReplay(r, drive)
        .catch((err: unknown) => log(`replay ${r.id}: ${(err as Error).message} (will retry)`))
        .finally(() => drivers.delete(r.id));
      drivers.set(r.id, d);
    }
  }

  // The poll is a job of its own registry (lib/jobs/registry.ts): one tick at a time, errors logged; a
  // replay started or resumed in this process wakes it at once (after the tick under way, if any).
  const poller = startJobs([{ name: POLL_JOB, everyMs: pollMs, run: tick }], log);
  const unregister = onReplayWake(() => poller.wake(POLL_JOB));

  return {
    id: workerId,
    async stop() {
      unregister();
      abort.abort();
      await poller.stop();
      await Promise.all(drivers.values());
    },
    async idle() {
      while (drivers.size || poller.running()) await Promise.all([...drivers.values(), poller.running()]);
    },
  };
}

/** The server's worker (lib/server/start.ts): off with KEYWARD_REPLAY_WORKER=0 (tests set that). */
export function scheduleReplayWorker(log: (msg: string) => void): () => Promise<void> {
  if (!loadEnv().KEYWARD_REPLAY_WORKER) return async () => {};
  const worker = startReplayWorker({ log });
  return () => worker.stop();
}
