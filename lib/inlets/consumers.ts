/**
 * The inlet consumers of one process: a job inside `keyward start` (KEYWARD_INLET_CONSUMER=on, the
 * default) that reads the inlets table every KEYWARD_INLET_POLL_MS (5 s), starts a consumer
 * (consumer.ts) for each inlet added, and stops the consumer of each inlet removed. Its work is bounded
 * by the inlets' prefetch: at most `prefetch` messages per inlet are held at a time.
 *
 * Several servers may run it on one database: RabbitMQ spreads a queue's messages over their consumers,
 * and a message is stored once whichever server stores it (the letters' identity is unique).
 */
import { loadEnv } from "../config/env";
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

const fingerprint = (c: InletConfig) => JSON.stringify([c.url, c.queue, c.eventIdFrom, c.prefetch]);

export function startInletConsumers(options: InletConsumersOptions = {}): InletConsumers {
  const pollMs = options.pollMs ?? loadEnv().KEYWARD_INLET_POLL_MS;
  const log = options.log ?? ((m: string) => console.error(`[keyward] ${m}`));
  const consumers = new Map<string, { consumer: InletConsumer; print: string }>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
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
      if (consumers.has(c.id)) continue;
      const consumer = new InletConsumer(c, { reportMs: pollMs, log });
      consumers.set(c.id, { consumer, print: fingerprint(c) });
      consumer.start();
    }
  }

  const refresh = () => (refreshing ??= sync().finally(() => (refreshing = null)));

  const arm = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      void refresh()
        .catch((err: unknown) => log(`inlets: ${(err as Error).message} (will retry)`))
        .finally(arm);
    }, pollMs);
    timer.unref();
  };
  void refresh()
    .catch((err: unknown) => log(`inlets: ${(err as Error).message} (will retry)`))
    .finally(arm);

  return {
    refresh,
    running: () => [...consumers.keys()],
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await refreshing?.catch(() => {});
      await Promise.all([...consumers.values()].map((c) => c.consumer.stop()));
      consumers.clear();
    },
  };
}

/** The server's consumers (lib/server/start.ts): off with KEYWARD_INLET_CONSUMER=off (tests set that). */
export function scheduleInletConsumers(log: (msg: string) => void): () => Promise<void> {
  if (loadEnv().KEYWARD_INLET_CONSUMER === "off") return async () => {};
  const consumers = startInletConsumers({ log });
  return () => consumers.stop();
}
