/**
 * The consumer of one RabbitMQ inlet: one connection and one channel, at most `prefetch` messages held
 * unacknowledged, each message stored as a dead letter (message.ts → lib/deadletters/intake.ts) and
 * acknowledged only after that statement committed. So nothing is lost when the process dies: an
 * unacknowledged message goes back to the queue and is delivered again, and its identity (originKey,
 * unique per source) makes the second storage a no-op, so it is acknowledged then without a second letter.
 *
 * Messages that arrive together are stored together (one statement per batch, up to `prefetch`). When the
 * database is down, the batch is retried with backoff while the messages stay unacknowledged (the prefetch
 * bound stops further deliveries). A lost connection or channel (broker restart, queue deleted, bad
 * credentials) is reconnected with exponential backoff and jitter (1 s … 30 s); the state and the last
 * error are reported on the inlet. Every `reportMs` the queue's depth (checkQueue's messageCount) and the
 * age of the last stored message are reported (the Overview's and GET /metrics' inlet lag).
 */
import type { Channel, ChannelModel, ConsumeMessage } from "amqplib";
import { connectAmqp, describeAmqpError } from "../amqp/connect";
import { recordInletLetters } from "../deadletters/intake";
import { reportInlet, type InletConfig, type InletReport } from "./inlets";
import { letterFromMessage } from "./message";
import { parseEventIdFrom, type EventIdFrom } from "./schema";

export const INLET_ACTOR_PREFIX = "inlet:";
const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 30_000;

/** Full-jitter exponential backoff: uniform in [min/2, min(max, min·2^attempt)). Pure given `random`. */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(attempt, 10));
  return Math.floor(BACKOFF_MIN_MS / 2 + random() * (ceiling - BACKOFF_MIN_MS / 2));
}

export type InletConsumerOptions = {
  /** How often the queue depth and the consumption figures are reported (ms). */
  reportMs: number;
  log: (msg: string) => void;
};

type Session = {
  conn: ChannelModel;
  channel: Channel;
  consumerTag?: string;
  pending: ConsumeMessage[];
  draining: Promise<void> | null;
  closed: boolean;
  /** Resolves when the connection or channel closes (or the consumer was cancelled by the broker). */
  ended: Promise<void>;
  end: () => void;
};

export class InletConsumer {
  private stopping = false;
  private session: Session | null = null;
  private running: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  /** Ends the current connection's life (consume() then closes it). */
  private endCurrent: (() => void) | null = null;
  private fresh = { consumed: 0, lastAt: undefined as Date | undefined, lastAge: undefined as number | undefined };
  private readonly actor: string;

  constructor(
    readonly config: InletConfig,
    private readonly options: InletConsumerOptions,
  ) {
    this.actor = `${INLET_ACTOR_PREFIX}${config.id}`;
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Stops consuming, finishes (or abandons, if the database is down) the batch in hand, closes the connection. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    const s = this.session;
    if (s && !s.closed) {
      if (s.consumerTag) await s.channel.cancel(s.consumerTag).catch(() => {});
      await s.draining;
    }
    // Also when stop() comes while connecting: consume() sees `stopping` or an ended life, and closes.
    this.endCurrent?.();
    await this.running;
  }

  private async run(): Promise<void> {
    let attempt = 0;
    while (!this.stopping) {
      const started = Date.now();
      try {
        await this.consume();
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        if (!this.stopping) {
          this.options.log(`inlet ${this.config.id} (${this.config.source} ← ${this.config.queue}): ${reason}; reconnecting`);
          await this.report({ state: "error", error: reason });
        }
      }
      if (this.stopping) break;
      // A session that ran a while was healthy: start the backoff over.
      attempt = Date.now() - started > BACKOFF_MAX_MS ? 0 : attempt + 1;
      await this.sleep(reconnectDelayMs(attempt));
    }
  }

  /** Waits `ms`, or until stop() wakes it. */
  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wake = done;
    }).then(() => void (this.wake = null));
  }

  /** One connection's life: resolves or throws when it ends. */
  private async consume(): Promise<void> {
    const { url, queue, prefetch } = this.config;
    if (url === null) throw new Error("the AMQP URL cannot be decrypted (the auth secret changed?): remove the inlet and add it again");
    const parsed = parseEventIdFrom(this.config.eventIdFrom);
    if (!parsed.ok) throw new Error(`event id from: ${parsed.error}`);
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    this.endCurrent = end;
    const conn = await connectAmqp(url, { name: `keyward inlet ${this.config.id}` });
    if (this.stopping) {
      await conn.close().catch(() => {});
      return;
    }
    let closeReason: string | null = null;
    conn.on("close", (err?: Error) => {
      if (err) closeReason = describeAmqpError(err, url);
      end();
    });
    let s: Session | null = null;
    try {
      const channel = await conn.createChannel();
      channel.on("error", (err: Error) => (closeReason = describeAmqpError(err, url)));
      channel.on("close", () => end());
      s = { conn, channel, pending: [], draining: null, closed: false, ended, end };
      this.session = s;
      await channel.prefetch(prefetch);
      const depth = await channel.checkQueue(queue).catch((err: Error) => {
        throw new Error(/404|NOT.FOUND/.test(err.message) ? `queue "${queue}" not found` : describeAmqpError(err, url));
      });
      const session = s;
      const { consumerTag } = await channel.consume(
        queue,
        (msg) => {
          if (msg === null) {
            closeReason = `the broker cancelled the consumer (queue "${queue}" deleted?)`;
            return end();
          }
          session.pending.push(msg);
          session.draining ??= this.drain(session, parsed.value).finally(() => (session.draining = null));
        },
        { noAck: false },
      );
      s.consumerTag = consumerTag;
      this.options.log(`inlet ${this.config.id}: consuming ${queue} for ${this.config.source} (prefetch ${prefetch})`);
      await this.report({ state: "consuming", error: null, lagMessages: depth.messageCount });
      const timer = setInterval(() => void this.reportLag(session), this.options.reportMs);
      timer.unref();
      try {
        await ended;
      } finally {
        clearInterval(timer);
      }
      if (!this.stopping) throw new Error(closeReason ?? "connection closed");
    } finally {
      if (s) {
        s.closed = true;
        // Unacknowledged messages return to the queue when the connection closes.
        await s.draining?.catch(() => {});
      }
      this.session = null;
      await conn.close().catch(() => {});
      if (this.stopping) await this.flushReport("consuming").catch(() => {});
    }
  }

  /** Stores what is pending, batch by batch, acknowledging each batch once it committed. */
  private async drain(s: Session, from: EventIdFrom): Promise<void> {
    let failures = 0;
    while (s.pending.length && !s.closed) {
      const batch = s.pending.slice(0, this.config.prefetch);
      const letters = batch.map((m) => letterFromMessage(m, this.config, from));
      try {
        const ids = await recordInletLetters(letters, this.actor);
        failures = 0;
        s.pending.splice(0, batch.length);
        const now = new Date();
        for (let i = 0; i < batch.length; i++) {
          if (ids[i] === null) continue; // a redelivery of a letter stored before
          this.fresh.consumed++;
          this.fresh.lastAt = now;
          const died = letters[i].failedAt ? Date.parse(letters[i].failedAt!) : NaN;
          this.fresh.lastAge = Number.isNaN(died) ? 0 : Math.max(0, (now.getTime() - died) / 1000);
        }
        if (s.closed) return; // the channel is gone: the broker redelivers, and the repeat is skipped
        try {
          for (const m of batch) s.channel.ack(m);
        } catch {
          return; // closed meanwhile: same as above
        }
      } catch (err) {
        if (this.stopping || s.closed) return; // leave them unacknowledged: they are delivered again
        failures++;
        const reason = `storing ${batch.length} message(s) failed: ${(err as Error).message}`;
        this.options.log(`inlet ${this.config.id}: ${reason} (retrying)`);
        await this.report({ state: "error", error: reason }).catch(() => {});
        await this.sleep(reconnectDelayMs(failures));
      }
    }
  }

  private async reportLag(s: Session): Promise<void> {
    if (s.closed) return;
    try {
      const { messageCount } = await s.channel.checkQueue(this.config.queue);
      await this.flushReport("consuming", messageCount);
    } catch {
      /* the session's close handler reports what went wrong */
    }
  }

  private async flushReport(state: InletReport["state"], lagMessages?: number): Promise<void> {
    const f = this.fresh;
    this.fresh = { consumed: 0, lastAt: undefined, lastAge: undefined };
    try {
      await reportInlet(this.config.id, { state, error: null, lagMessages, consumed: f.consumed, lastMessageAt: f.lastAt, lastMessageAgeSeconds: f.lastAge });
    } catch (err) {
      // Not reported: keep the figures for the next report.
      this.fresh.consumed += f.consumed;
      this.fresh.lastAt ??= f.lastAt;
      this.fresh.lastAge ??= f.lastAge;
      throw err;
    }
  }

  private async report(r: InletReport): Promise<void> {
    if (r.state === "consuming") return this.flushReport("consuming", r.lagMessages).catch(() => {});
    await reportInlet(this.config.id, r).catch(() => {});
  }
}
