/**
 * A heartbeat: the job library's primitive for periodic work that belongs to one operation or one
 * connection rather than to the process, and so starts and stops with it, not with a registry:
 *
 * - a held lease's renewal (lib/db/lease.ts `withLease`: every third of the lease while the job runs);
 * - a replay's lease heartbeat while a worker drives it (lib/replay/drive.ts);
 * - the API-key listener's ping on its own LISTEN connection (lib/auth/api-key-cache.ts).
 *
 * The contract, like a registry job's: a beat never overlaps the previous one (a tick that finds a beat
 * still running is skipped); a beat's error is the beat's business (it is caught here, never thrown to
 * the timer); the timer is unref'd, so a heartbeat never keeps a process alive; `stop()` arms nothing more
 * and resolves once the beat in progress, if any, has ended. Process-wide periodic work is a `Job` of a
 * registry instead (registry.ts).
 */

export type Heartbeat = {
  /** Stops beating and waits for the beat in progress. Idempotent. */
  stop(): Promise<void>;
};

/** Calls `beat` every `everyMs` (the first after `everyMs`, or at once with `now`) until stopped. */
export function startHeartbeat(everyMs: number, beat: () => Promise<void>, options: { now?: boolean } = {}): Heartbeat {
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = () => {
    if (running || stopped) return;
    running = beat()
      .catch(() => {})
      .finally(() => (running = undefined));
  };
  const timer = setInterval(tick, everyMs);
  timer.unref();
  if (options.now) tick();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
