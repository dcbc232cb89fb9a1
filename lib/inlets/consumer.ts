/**
 * The consumer of one inlet, whatever its kind (kinds/: RabbitMQ, BullMQ, NATS JetStream): one connection
 * at a time (a "link"), at most `prefetch` messages held unacknowledged, each message stored as a dead
 * letter (lib/deadletters/intake.ts) and acknowledged, in the kind's own way, only after that statement
 * committed. So nothing is lost when the process dies: an unacknowledged message is delivered again, and
 * its identity (originKey, unique per source) makes the second storage a no-op, so it is acknowledged
 * then without a second letter.
 *
 * Messages that arrive together are stored together (one statement per batch, up to `prefetch`). When the
 * database is down, the batch is retried with backoff while the messages stay unacknowledged (the prefetch
 * bound stops further deliveries). A lost connection (broker restart, queue deleted, bad credentials) is
 * reconnected with exponential backoff and jitter (0.5 s … 30 s); the state and the last error are
 * reported on the inlet. The connection's periodic work runs in a jobs registry of its own (lib/jobs): the
 * lag report every `reportMs` (the messages waiting, and the age of the last stored message: the
 * Overview's and GET /metrics' inlet lag) and, for BullMQ, the pass over the failed set.
 */
import { loadEnv } from "@/lib/config/env";
import { recordInletLetters } from "@/lib/deadletters/intake";
import { startJobs, type Jobs } from "@/lib/jobs/registry";
import { reportInlet, type InletConfig, type InletReport } from "./inlets";
import { inletKind } from "./kinds";
import type { Delivery, InletLink } from "./kinds/link";
import { parseEventIdFrom } from "./schema";

export const INLET_ACTOR_PREFIX = "inlet:";
const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 30_000;

/** Full-jitter exponential backoff: uniform in [min/2, min(max, min·2^attempt)). Pure given `random`. */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(attempt, 10));
  return Math.floor(BACKOFF_MIN_MS / 2 + random() * (ceiling - BACKOFF_MIN_MS / 2));
}

export type InletConsumerOptions = {
  /** How often the lag is reported and periodic work (BullMQ's pass) runs (ms). */
  reportMs: number;
  log: (msg: string) => void;
};

type Pending = { delivery: Delivery; done: () => void };

type Session = {
  link: InletLink | null;
  pending: Pending[];
  draining: Promise<void> | null;
  closed: boolean;
  jobs: Jobs | null;
};

export class InletConsumer {
  private stopping = false;
  private session: Session | null = null;
  private running: Promise<void> | null = null;
  private wake: (() => void) | null = null;
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
    if (s?.link && !s.closed) {
      await s.link.stop();
      await s.draining;
      await s.link.close();
    }
    await this.running;
  }

  private describe(): string {
    return `inlet ${this.config.id} (${this.config.source} ← ${this.config.kind} ${this.config.queue})`;
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
          this.options.log(`${this.describe()}: ${reason}; reconnecting`);
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
    const { url } = this.config;
    if (url === null) throw new Error(`the ${this.config.kind} URL cannot be decrypted (the auth secret changed?): remove the inlet and add it again`);
    const parsed = parseEventIdFrom(this.config.eventIdFrom, this.config.kind);
    if (!parsed.ok) throw new Error(`event id from: ${parsed.error}`);
    const s: Session = { link: null, pending: [], draining: null, closed: false, jobs: null };
    this.session = s;
    let link: InletLink | null = null;
    try {
      link = await inletKind(this.config.kind).connect({
        config: { ...this.config, url },
        from: parsed.value,
        maxPayloadBytes: loadEnv().KEYWARD_MAX_PAYLOAD_BYTES,
        pollMs: this.options.reportMs,
        log: this.options.log,
        deliver: (batch) => this.accept(s, batch),
      });
      s.link = link;
      if (this.stopping) return;
      if (s.pending.length) s.draining ??= this.drain(s).finally(() => (s.draining = null));
      this.options.log(`${this.describe()}: consuming (prefetch ${this.config.prefetch})`);
      await this.report({ state: "consuming", error: null, lagMessages: (await link.lag().catch(() => null)) ?? undefined });
      s.jobs = startJobs([{ name: "lag report", everyMs: this.options.reportMs, run: () => this.reportLag(s) }, ...link.jobs], (m) =>
        this.options.log(`${this.describe()}: ${m}`),
      );
      const reason = await link.ended;
      if (!this.stopping) throw new Error(reason ?? "connection closed");
    } finally {
      s.closed = true;
      await s.jobs?.stop();
      // What was delivered and not acknowledged goes back to the broker with the connection.
      await s.draining?.catch(() => {});
      for (const p of s.pending.splice(0)) p.done();
      this.session = null;
      await link?.close().catch(() => {});
      if (this.stopping) await this.flushReport("consuming").catch(() => {});
    }
  }

  /** A link's deliveries: queued for the drain; resolves once they are acknowledged or given up. */
  private accept(s: Session, batch: Delivery[]): Promise<void> {
    if (batch.length === 0 || s.closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let left = batch.length;
      const done = () => {
        if (--left === 0) resolve();
      };
      for (const delivery of batch) s.pending.push({ delivery, done });
      if (s.link) s.draining ??= this.drain(s).finally(() => (s.draining = null));
    });
  }

  /** Stores what is pending, batch by batch, acknowledging each batch once it committed. */
  private async drain(s: Session): Promise<void> {
    let failures = 0;
    while (s.pending.length && !s.closed && s.link) {
      const batch = s.pending.slice(0, this.config.prefetch);
      const letters = batch.map((p) => p.delivery.letter);
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
        try {
          // The connection may be gone: then the broker delivers them again, and the repeat is skipped.
          if (!s.closed) await s.link.ack(batch.map((p) => p.delivery));
        } catch {
          /* the link's end is reported by consume() */
        } finally {
          for (const p of batch) p.done();
        }
      } catch (err) {
        if (this.stopping || s.closed) return; // leave them unacknowledged: they are delivered again
        failures++;
        const reason = `storing ${batch.length} message(s) failed: ${(err as Error).message}`;
        this.options.log(`${this.describe()}: ${reason} (retrying)`);
        await this.report({ state: "error", error: reason }).catch(() => {});
        await this.sleep(reconnectDelayMs(failures));
      }
    }
  }

  private async reportLag(s: Session): Promise<void> {
    if (s.closed || !s.link) return;
    let lag: number | null;
    try {
      lag = await s.link.lag();
    } catch {
      return; // the link's end reports what went wrong
    }
    await this.flushReport("consuming", lag ?? undefined);
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
