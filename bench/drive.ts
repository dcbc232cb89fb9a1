/**
 * The closed-loop load driver: `clients` concurrent loops, each issuing its next request as soon as the
 * previous one answers, until the duration is over. Every request's latency is recorded.
 *
 * Throughput is the sum over clients of (that client's requests ÷ the time from the start to its last
 * answer). Dividing all requests by the time until the *last* client finished would charge the idle
 * tail of the clients that finished earlier, which for long requests (a batch of 1000 at 8 clients
 * takes about half a second) would understate the rate in proportion to latency.
 */
import type { RoundSample } from "./stats";

/** One request; resolves when it has been answered correctly, throws otherwise. */
export type Op = () => Promise<void>;

export async function drive(op: Op, clients: number, durationMs: number, eventsPerOp: number): Promise<RoundSample> {
  const latenciesMs: number[] = [];
  let failure: { error: unknown } | undefined;
  const start = performance.now();
  const deadline = start + durationMs;
  const loop = async (): Promise<number> => {
    let ops = 0;
    let last = start;
    while (!failure && last < deadline) {
      const t0 = performance.now();
      try {
        await op();
      } catch (error) {
        failure ??= { error };
        break;
      }
      last = performance.now();
      latenciesMs.push(last - t0);
      ops++;
    }
    return ops === 0 ? 0 : (ops * 1000) / (last - start);
  };
  const rates = await Promise.all(Array.from({ length: clients }, loop));
  if (failure) throw failure.error;
  return { ops: latenciesMs.length, opsPerSec: rates.reduce((a, b) => a + b, 0), eventsPerOp, latenciesMs };
}
