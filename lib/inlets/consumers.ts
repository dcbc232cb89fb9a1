/**
 * The inlet consumers of one process: a job of the jobs registry (lib/jobs) inside `keyward start`
 * (KEYWARD_INLET_CONSUMER=on, the default) that reads the inlets table every KEYWARD_INLET_POLL_MS (5 s),
 * starts a consumer (consumer.ts) for each inlet added, and stops the consumer of each inlet removed or
 * changed. Its work is bounded by the inlets' prefetch: at most `prefetch` messages per inlet are held at
 * a time; each consumer's own periodic work (lag reports, BullMQ's passes) runs in a registry of its own.
 *
 * Several servers may run it on one database: RabbitMQ and JetStream spread a queue's messages over their
 * consumers, BullMQ's failed jobs are read by each, and a message is stored once whichever server stores
 * it (the letters' identity is unique).
 */
import { loadEnv } from "@/lib/config/env";
import { startJobs, type Job } from "@/lib/jobs/registry";
import { InletConsumer } from "./consumer";
import { loadInletConfigs, type InletConfig } from "./inlets";

export type InletConsumersOptions = {
  /** How often the inlets table is read and each inlet's lag reported (default KEYWARD_INLET_POLL_MS). */
  pollMs?: number;
  /** Consume only these inlet ids (tests; default: every inlet). */
  only?: readonly string[];
  log?: (msg: string) => void;
};

export type InletConsumers = {
  /** Reads the inlets table now and starts / stops consumers to match. */
  refresh(): Promise<void>;
  /** The inlet ids being consumed. */
  running(): string[];
  stop(): Promise<void>;
};

const JOB = "inlet consumers";

const fingerprint = (c: InletConfig) => JSON.stringify([c.kind, c.url, c.queue, c.settings, c.eventIdFrom, c.prefetch]);

/**
 * The inlet supervisor as a job of the registry: a pass reads the inlets table (at once when the registry
 * starts, then every pollMs after each read ended) and starts or stops consumers to match; the
 * registry's stop stops every consumer (each stores and acknowledges the batch in hand).
 */
export function inletConsumersJob(options: InletConsumersOptions = {}): Job & Omit<InletConsumers, "stop"> {
  const pollMs = options.pollMs ?? loadEnv().KEYWARD_INLET_POLL_MS;
  const log = options.log ?? ((m: string) => console.error(`[keyward] ${m}`));
  const consumers = new Map<string, { consumer: InletConsumer; print: string }>();
  let stopped = false;
  let refreshing: Promise<void> | null = null;

  async function sync(): Promise<void> {
    const configs = await loadInletConfigs(options.only);
    if (stopped) return;
    const wanted = new Map(configs.map((c) => [c.id, c]));
    const stopping: Promise<void>[] = [];
    for (const [id, { consumer, print }] of consumers) {
      const c = wanted.get(id);
      if (!c || fingerprint(c) !== print) {
        consumers.delete(id);
        stopping.push(consumer.stop());
        if (!c) log(`inlet ${id} removed: stopped consuming`);
      }
    }
    await Promise.all(stopping);
    for (const c of configs) {
      if (consumers.has(c.id) || stopped) continue;
      const consumer = new InletConsumer(c, { reportMs: pollMs, log });
      consumers.set(c.id, { consumer, print: fingerprint(c) });
      consumer.start();
    }
  }

  const refresh = () => (refreshing ??= sync().finally(() => (refreshing = null)));
  return {
    name: JOB,
    everyMs: pollMs,
    runAtStart: true,
    run: () => refresh(),
    refresh,
    running: () => [...consumers.keys()],
    async stop() {
      stopped = true;
      await refreshing?.catch(() => {});
      await Promise.all([...consumers.values()].map((c) => c.consumer.stop()));
      consumers.clear();
    },
  };
}

/** The supervisor in a registry of its own (tests, and a process that consumes and does nothing else). */
export function startInletConsumers(options: InletConsumersOptions = {}): InletConsumers {
  const job = inletConsumersJob(options);
  const log = options.log ?? ((m: string) => console.error(`[keyward] ${m}`));
  const jobs = startJobs([job], (m) => log(`inlets: ${m}`));
  return { refresh: job.refresh, running: job.running, stop: () => jobs.stop() };
}

/** The server's supervisor (lib/server/start.ts): none with KEYWARD_INLET_CONSUMER=off (tests set that). */
export function inletConsumerJobs(log: (msg: string) => void): Job[] {
  if (loadEnv().KEYWARD_INLET_CONSUMER === "off") return [];
  return [inletConsumersJob({ log })];
}
