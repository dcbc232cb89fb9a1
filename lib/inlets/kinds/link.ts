/**
 * What the consumer (../consumer.ts) needs of one inlet kind: `connect` opens one connection's life (a
 * "link") that delivers messages already turned into dead letters, and acknowledges them when told, which
 * the consumer does only after their letters committed. Each kind keeps its own meaning of "acknowledge":
 * RabbitMQ's basic.ack, a mark on the BullMQ job and the inlet's position in the failed set, JetStream's
 * ack of the advisory. Everything else (batching, storing, retrying a failed store, reconnecting with
 * backoff, reporting the state and the lag) is the consumer's, the same for every kind.
 */
import type { Job } from "@/lib/jobs/registry";
import type { InletLetter } from "@/lib/inlets/message";
import type { InletConfig } from "@/lib/inlets/inlets";
import type { EventIdFrom, InletSettings } from "@/lib/inlets/schema";

/** One message as a letter, with what its link needs to acknowledge it. */
export type Delivery = { letter: InletLetter; handle: unknown };

export interface InletLink {
  /** Resolves with the reason when the connection ends without close() (null after close()). */
  readonly ended: Promise<string | null>;
  /** Messages waiting to be taken (the queue's depth, untaken failed jobs, pending advisories); null: unknown. */
  lag(): Promise<number | null>;
  /** Acknowledges deliveries whose letters committed (in delivery order); throws when the connection is gone. */
  ack(batch: Delivery[]): Promise<void>;
  /** Periodic work of this connection (BullMQ's pass over the failed set), run by the consumer's registry. */
  readonly jobs: Job[];
  /** Stops delivering; what was delivered and not acknowledged stays with the broker. */
  stop(): Promise<void>;
  /** Closes the connection. */
  close(): Promise<void>;
}

export type LinkContext = {
  config: InletConfig & { url: string };
  from: EventIdFrom;
  maxPayloadBytes: number;
  /** How often periodic work runs (ms). */
  pollMs: number;
  /** Hands deliveries to the consumer; resolves once they are acknowledged or given up (the connection ended). */
  deliver(batch: Delivery[]): Promise<void>;
  log(msg: string): void;
};

export type InletKindImpl = {
  /** Connects, checks that what the inlet consumes exists, disconnects; rejects with a readable reason. */
  check(target: { url: string; queue: string; settings: InletSettings }): Promise<void>;
  connect(ctx: LinkContext): Promise<InletLink>;
};
