/**
 * Waking this process's replay workers at once when a replay starts or resumes, instead of at their next
 * poll (KEYWARD_REPLAY_POLL_MS). Process-wide (lib/process-global.ts): Next's route bundles and the
 * server's own modules are separate module instances, and the route that starts a replay must reach the
 * worker the server runs. Workers of other instances still find it at their next poll.
 */
import "server-only";
import { processGlobal } from "@/lib/process-global";

const wakers = processGlobal("replayWakers", () => new Set<() => void>());

/** Registers a worker's wake-up; the answer unregisters it. */
export function onReplayWake(wake: () => void): () => void {
  wakers.add(wake);
  return () => wakers.delete(wake);
}

/** Asks every worker of this process to look for running replays now. */
export function wakeReplayWorkers(): void {
  for (const wake of wakers) wake();
}
