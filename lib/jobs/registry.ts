/**
 * The jobs registry: every periodic job of a process is declared one way, `{ name, everyMs, run(signal) }`,
 * and started and stopped together (`keyward start` starts the pruner, the metrics sampler and the audit
 * partitions' upkeep in lib/server/start.ts; each replay worker polls through one of its own).
 *
 * The contract, the same for every job:
 * - **No overlap with itself.** A job's next pass is armed only when its previous pass has ended: everyMs
 *   after that end, or `nextDelayMs()` from then when the job aims at the wall clock (the sampler). Jobs that
 *   must run once across instances take a lease or a lock of their own (the pruner's lease, the sampler's
 *   advisory lock); the registry only orders passes within this process.
 * - **Errors are logged, never thrown.** A pass that fails is logged with the job's name and the job runs
 *   again at its next tick; a failing job never stops the others or the server.
 * - **Stop is clean.** `stop()` arms nothing more, aborts the signal every pass was given (a job ends its
 *   current batch early: the pruner after its batch, the replay poller before taking more), and resolves
 *   once the passes running then have ended, so the caller may close the pool after it.
 * - A job whose everyMs is 0 is off (the *_INTERVAL_SECONDS=0 settings). Timers are unref'd: a registry
 *   never keeps a process alive on its own.
 * - **It says how each job is doing.** `status()` tells, per job, when its last pass started, ended well
 *   or failed, and whether one is running; every running registry of the process is listed by
 *   `jobStatuses()`, which GET /readyz reads (lib/health) to find a wedged job: a pass running longer than
 *   its `wedgedAfterMs`, or a pass overdue by that much (its timer never fired).
 */
import { processGlobal } from "@/lib/process-global";

export type Job = {
  /** Names the job in the log ("pruning failed (will retry in 60 s): …"); unique within one registry. */
  name: string;
  /** Pause between the end of one pass and the start of the next; 0 turns the job off. */
  everyMs: number;
  /** Optional: the delay before each pass, instead of everyMs (the sampler aims at the wall clock's minute). */
  nextDelayMs?: () => number;
  /** One pass. `signal` is aborted when the registry stops: end early, at a point that leaves things whole. */
  run(signal: AbortSignal): Promise<void>;
  /**
   * A pass running longer than this, or overdue by this much, means the job is wedged (GET /readyz says
   * so). Default DEFAULT_WEDGED_AFTER_MS, at least three intervals; a job whose pass may run longer (a
   * pruning budget) declares its own.
   */
  wedgedAfterMs?: number;
  /** Optional: the first pass at once when the registry starts, instead of after the first delay. */
  runAtStart?: boolean;
  /**
   * Optional: what the job holds between passes, let go when the registry stops, after its passes have
   * ended (the inlet consumers: each stores and acknowledges the batch in hand). Its error is logged.
   */
  stop?(): Promise<void>;
};

/** A job is wedged after this long in one pass (or this long overdue) unless it declares its own bound. */
export const DEFAULT_WEDGED_AFTER_MS = 10 * 60_000;

/** How one job of a running registry is doing (times are epoch milliseconds, null: not yet). */
export type JobStatus = {
  name: string;
  everyMs: number;
  wedgedAfterMs: number;
  /** When the pass in progress started, or null when none is running. */
  runningSince: number | null;
  /** When the next pass is due (null while one runs, or after stop). */
  nextDueAt: number | null;
  lastStartedAt: number | null;
  /** When the last pass that did not throw ended. */
  lastSucceededAt: number | null;
  lastFailedAt: number | null;
  /** The last failed pass's message (kept after a later success, with lastFailedAt). */
  lastError: string | null;
};

export type Jobs = {
  /** The passes in progress now, as one promise, or undefined when no job is running. */
  running(): Promise<void> | undefined;
  /** Stops arming passes, aborts the running ones' signal and waits for them to end. Idempotent. */
  stop(): Promise<void>;
  /**
   * Runs the job named `name` now instead of at its next tick: at once when it is idle, or right after
   * the pass under way (never two passes of one job at a time). Nothing after stop().
   */
  wake(name: string): void;
  /** How each of its jobs is doing (jobs that are off are left out). */
  status(): JobStatus[];
};

/** Every registry started in this process and not stopped yet (process-wide: Next's copy of lib reads them too). */
const live = processGlobal("jobRegistries", () => new Set<Jobs>());

/** The status of every job of every running registry of this process. */
export function jobStatuses(): JobStatus[] {
  return [...live].flatMap((jobs) => jobs.status());
}

/** Starts `jobs` (each one's first pass comes after its first delay, or at once for a `runAtStart` job). */
export function startJobs(jobs: readonly Job[], log: (msg: string) => void): Jobs {
  const names = new Set<string>();
  for (const job of jobs) {
    if (names.has(job.name)) throw new Error(`two jobs named "${job.name}" in one registry`);
    names.add(job.name);
  }
  const abort = new AbortController();
  const timers = new Map<Job, NodeJS.Timeout>();
  const passes = new Map<Job, Promise<void>>();
  const woken = new Set<Job>();
  let stopping: Promise<void> | undefined;
  const states = new Map<Job, JobStatus>(
    jobs
      .filter((job) => job.everyMs > 0)
      .map((job) => [
        job,
        {
          name: job.name,
          everyMs: job.everyMs,
          wedgedAfterMs: job.wedgedAfterMs ?? Math.max(DEFAULT_WEDGED_AFTER_MS, 3 * job.everyMs),
          runningSince: null,
          nextDueAt: null,
          lastStartedAt: null,
          lastSucceededAt: null,
          lastFailedAt: null,
          lastError: null,
        },
      ]),
  );

  const arm = (job: Job) => {
    const state = states.get(job)!;
    if (abort.signal.aborted) {
      state.nextDueAt = null;
      return;
    }
    const delay = Math.max(0, woken.delete(job) ? 0 : (job.nextDelayMs?.() ?? job.everyMs));
    const timer = setTimeout(() => {
      timers.delete(job);
      pass(job);
    }, delay);
    timer.unref();
    timers.set(job, timer);
    state.nextDueAt = Date.now() + delay;
  };

  const pass = (job: Job) => {
    const state = states.get(job)!;
    state.runningSince = state.lastStartedAt = Date.now();
    state.nextDueAt = null;
    const done = (async () => {
      try {
        await job.run(abort.signal);
        state.lastSucceededAt = Date.now();
      } catch (err) {
        state.lastFailedAt = Date.now();
        state.lastError = err instanceof Error ? err.message : String(err);
        log(`${job.name} failed (will retry ${retryIn(job)}): ${state.lastError}`);
      } finally {
        state.runningSince = null;
      }
    })().finally(() => {
      passes.delete(job);
      arm(job);
    });
    passes.set(job, done);
  };

  for (const job of jobs) {
    if (job.everyMs <= 0) continue;
    if (job.runAtStart) woken.add(job);
    arm(job);
  }

  const registry: Jobs = {
    running: () => (passes.size ? Promise.all(passes.values()).then(() => {}) : undefined),
    stop() {
      stopping ??= (async () => {
        live.delete(registry);
        abort.abort();
        for (const timer of timers.values()) clearTimeout(timer);
        timers.clear();
        for (const state of states.values()) state.nextDueAt = null;
        await Promise.all(passes.values());
        // What the jobs hold between passes, once no pass runs.
        const holding = jobs.filter((job) => job.everyMs > 0 && job.stop);
        await Promise.all(holding.map((job) => job.stop!().catch((err) => log(`${job.name}: stopping failed: ${err instanceof Error ? err.message : String(err)}`))));
      })();
      return stopping;
    },
    wake(name) {
      const job = jobs.find((j) => j.name === name);
      if (!job || job.everyMs <= 0 || abort.signal.aborted) return;
      woken.add(job);
      if (passes.has(job)) return; // armed at once when the pass under way ends
      clearTimeout(timers.get(job));
      timers.delete(job);
      arm(job);
    },
    status: () => [...states.values()].map((s) => ({ ...s })),
  };
  live.add(registry);
  return registry;
}

/**
 * Why a job is wedged at `now` (epoch ms), or null when it is not: a pass running longer than its
 * wedgedAfterMs, or a pass overdue by that much (the timer that should have started it never fired). A job
 * whose passes fail is not wedged: it runs, and its errors are logged (and shown by lastError). Pure.
 */
export function wedgedReason(s: JobStatus, now: number): string | null {
  const secs = (ms: number) => (ms < 10_000 ? `${Math.round(ms)} ms` : `${Math.round(ms / 1000)} s`);
  if (s.runningSince !== null && now - s.runningSince > s.wedgedAfterMs) {
    return `${s.name}: a pass has been running for ${secs(now - s.runningSince)} (wedged after ${secs(s.wedgedAfterMs)})`;
  }
  if (s.runningSince === null && s.nextDueAt !== null && now - s.nextDueAt > s.wedgedAfterMs) {
    return `${s.name}: its next pass is ${secs(now - s.nextDueAt)} overdue (wedged after ${secs(s.wedgedAfterMs)})`;
  }
  return null;
}

function retryIn(job: Job): string {
  return job.nextDelayMs ? "at its next tick" : `in ${job.everyMs / 1000} s`;
}
