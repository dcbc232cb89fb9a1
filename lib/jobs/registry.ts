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
 */

export type Job = {
  /** Names the job in the log ("pruning failed (will retry in 60 s): …"); unique within one registry. */
  name: string;
  /** Pause between the end of one pass and the start of the next; 0 turns the job off. */
  everyMs: number;
  /** Optional: the delay before each pass, instead of everyMs (the sampler aims at the wall clock's minute). */
  nextDelayMs?: () => number;
  /** One pass. `signal` is aborted when the registry stops: end early, at a point that leaves things whole. */
  run(signal: AbortSignal): Promise<void>;
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
};

/** Starts `jobs` (each one's first pass comes after its first delay, not at once). */
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

  const arm = (job: Job) => {
    if (abort.signal.aborted) return;
    const delay = woken.delete(job) ? 0 : (job.nextDelayMs?.() ?? job.everyMs);
    const timer = setTimeout(() => {
      timers.delete(job);
      pass(job);
    }, Math.max(0, delay));
    timer.unref();
    timers.set(job, timer);
  };

  const pass = (job: Job) => {
    const done = (async () => {
      try {
        await job.run(abort.signal);
      } catch (err) {
        log(`${job.name} failed (will retry ${retryIn(job)}): ${err instanceof Error ? err.message : String(err)}`);
      }
    })().finally(() => {
      passes.delete(job);
      arm(job);
    });
    passes.set(job, done);
  };

  for (const job of jobs) if (job.everyMs > 0) arm(job);

  return {
    running: () => (passes.size ? Promise.all(passes.values()).then(() => {}) : undefined),
    async stop() {
      abort.abort();
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      await Promise.all(passes.values());
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
  };
}

function retryIn(job: Job): string {
  return job.nextDelayMs ? "at its next tick" : `in ${job.everyMs / 1000} s`;
}
