/**
 * The demo's history, simulated (pure, seeded: the same seed gives the same days). Three senders deliver
 * one event a minute each for a few days and retry some of them on their own schedule; each delivery
 * meets the key as Keyward would have kept it — claimed, a duplicate of a live key (with its age), or,
 * after the key expired, a reclaim (processed twice: a late duplicate). A pruner runs every 10 minutes
 * and deletes expired keys (two of its runs fail). seed.ts writes the result into the tables.
 *
 * - stripe: Stripe-like exponential backoff for up to ~3 days (a few incident retries 3 d 2 h late),
 *   TTL 7 d: every retry is caught.
 * - github: a few quick automatic attempts (seconds), two manual redeliveries a day later, TTL 4 d.
 * - orders: misconfigured — TTL 8 h 5 min while its sender retries for up to 1.5 days: late retries
 *   reclaim expired keys (processed twice); a replay re-drives some of them too.
 */
import { bucketIndex, BUCKET_COUNT } from "@/lib/metrics/duplicate-ages";

export type DemoSource = {
  name: string;
  actor: string;
  eventTypes: string[];
  parts: { retryWindowSeconds: number; queueLagSeconds: number; clockSkewSeconds: number; replaySeconds: number };
  preset: string | null;
};

const M = 60;
const H = 3600;
const D = 86400;

export const DEMO_SOURCES: DemoSource[] = [
  {
    name: "stripe",
    actor: "apikey:billing",
    eventTypes: ["invoice.paid", "charge.succeeded", "customer.subscription.updated", "payment_intent.succeeded"],
    parts: { retryWindowSeconds: 3 * D, queueLagSeconds: D, clockSkewSeconds: 5 * M, replaySeconds: 2 * D + 23 * H + 55 * M },
    preset: "stripe",
  },
  {
    name: "github",
    actor: "apikey:ci-bot",
    eventTypes: ["push", "pull_request", "check_run", "issues"],
    parts: { retryWindowSeconds: H, queueLagSeconds: D, clockSkewSeconds: 5 * M, replaySeconds: 2 * D + 22 * H + 55 * M },
    preset: "github",
  },
  {
    name: "orders",
    actor: "apikey:fulfilment",
    eventTypes: ["order.created", "order.paid", "order.shipped"],
    // Misconfigured: its sender retries for 1.5 days, but the TTL is 8 h 5 min.
    parts: { retryWindowSeconds: 6 * H, queueLagSeconds: H, clockSkewSeconds: 5 * M, replaySeconds: H },
    preset: null,
  },
];

export const ttlOf = (s: DemoSource) =>
  s.parts.retryWindowSeconds + s.parts.queueLagSeconds + s.parts.clockSkewSeconds + s.parts.replaySeconds;

export const PRUNE_EVERY_SECONDS = 600;

/** mulberry32: small, seeded, good enough for a demo. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const jitter = (rand: () => number, s: number, spread = 0.2) => s * (1 + (rand() * 2 - 1) * spread);

/** Offsets (seconds after the first delivery) of a sender's retries of one event. */
function retriesOf(source: string, rand: () => number, index: number): number[] {
  if (source === "stripe") {
    // A few events of the first day hit by the sender's own incident: redelivered 3 d 2 h after the first attempt.
    if (index < 1300 && index % 260 === 37) return [60, 3 * D + 2 * H];
    if (rand() > 0.38) return [];
    const schedule = [60, 5 * M, 30 * M, 2 * H, 6 * H, D, 2 * D, 3 * D - H];
    let k = 1;
    while (k < schedule.length && rand() < 0.45) k++;
    return schedule.slice(0, k).map((s) => jitter(rand, s));
  }
  if (source === "github") {
    if (index === 1200 || index === 3100) return [jitter(rand, 20 * H)]; // manual redeliveries
    if (rand() > 0.4) return [];
    const quick = [2 + rand() * 18];
    if (rand() < 0.1) quick.push(30 + rand() * 60);
    return quick;
  }
  // orders: retries while its handler keeps failing, for up to 1.5 days
  if (rand() > 0.3) return [];
  const schedule = [5 * M, H, 4 * H, 12 * H, D, D + 12 * H];
  let k = 1;
  while (k < schedule.length && rand() < 0.5) k++;
  return schedule.slice(0, k).map((s) => jitter(rand, s, 0.1));
}

export type Generation = {
  source: string;
  eventId: string;
  eventType: string;
  /** ms */
  start: number;
  kind: "claimed" | "reclaimed_after_expiry";
  expires: number;
  /** When its row left the table: pruned, replaced by a reclaim, or null (still stored). */
  gone: number | null;
  duplicates: number;
  lastDuplicate: number | null;
  /** Claimed by a replay's delivery (the replay's `replayed` audit row follows). */
  viaReplay: boolean;
};

export type Duplicate = { source: string; at: number; ageSeconds: number };

export type PruneRun = { at: number; rows: number; error: string | null };

export type Simulation = {
  from: number;
  to: number;
  generations: Generation[];
  duplicates: Duplicate[];
  pruneRuns: PruneRun[];
  /** Events of each source that exist (for dead letters), by index. */
  events: Map<string, { eventId: string; eventType: string; first: number }[]>;
};

export type ExtraDelivery = { source: string; eventId: string; eventType: string; at: number; viaReplay: boolean };

/** Event ids in each sender's style. */
function eventIdOf(source: string, i: number, rand: () => number): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const pick = (n: number) => Array.from({ length: n }, () => chars[Math.floor(rand() * chars.length)]).join("");
  if (source === "stripe") return `evt_1Q${pick(22)}`;
  if (source === "github") {
    const hex = () => Math.floor(rand() * 16).toString(16);
    const h = (n: number) => Array.from({ length: n }, hex).join("");
    return `${h(8)}-${h(4)}-11ef-${h(4)}-${h(12)}`;
  }
  return `ord_${(100000 + i).toString(36)}_${pick(6)}`;
}

/**
 * Simulates `days` of traffic ending at `now` (ms). `failedPrunes` are instants (ms) near which a pruning
 * run fails; `extra` are deliveries added on top (a replay's). Pure.
 */
export function simulate(now: number, days: number, opts: { seed?: number; failedPrunes?: number[]; extra?: (sim: Simulation) => ExtraDelivery[] } = {}): Simulation {
  const rand = seeded(opts.seed ?? 20261205);
  const from = now - days * D * 1000;
  // Pruning runs every 10 minutes; the ones nearest `failedPrunes` fail and delete nothing.
  const runTimes: number[] = [];
  for (let t = from + 17_000; t < now; t += PRUNE_EVERY_SECONDS * 1000) runTimes.push(t);
  const failed = new Set((opts.failedPrunes ?? []).map((f) => runTimes.reduce((best, t) => (Math.abs(t - f) < Math.abs(best - f) ? t : best), runTimes[0])));
  const okRuns = runTimes.filter((t) => !failed.has(t));
  /** The first successful run at or after `t` (binary search), or null. */
  const prunedAt = (t: number): number | null => {
    let lo = 0;
    let hi = okRuns.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (okRuns[mid] < t) lo = mid + 1;
      else hi = mid;
    }
    return lo < okRuns.length ? okRuns[lo] : null;
  };

  const sim: Simulation = { from, to: now, generations: [], duplicates: [], pruneRuns: [], events: new Map() };
  const deliveries: ExtraDelivery[] = [];
  for (const s of DEMO_SOURCES) {
    const list: { eventId: string; eventType: string; first: number }[] = [];
    for (let i = 0; ; i++) {
      const first = from + i * 60_000 + Math.floor(rand() * 50_000);
      if (first >= now) break;
      const eventId = eventIdOf(s.name, i, rand);
      const eventType = s.eventTypes[Math.floor(rand() * s.eventTypes.length)];
      list.push({ eventId, eventType, first });
      deliveries.push({ source: s.name, eventId, eventType, at: first, viaReplay: false });
      for (const off of retriesOf(s.name, rand, i)) {
        const at = first + Math.round(off * 1000);
        if (at < now) deliveries.push({ source: s.name, eventId, eventType, at, viaReplay: false });
      }
    }
    sim.events.set(s.name, list);
  }
  for (const d of opts.extra?.(sim) ?? []) if (d.at < now) deliveries.push(d);
  deliveries.sort((a, b) => a.at - b.at);

  const ttlMs = new Map(DEMO_SOURCES.map((s) => [s.name, ttlOf(s) * 1000]));
  const current = new Map<string, Generation>();
  for (const d of deliveries) {
    const key = `${d.source}/${d.eventId}`;
    const g = current.get(key);
    if (g && d.at < g.expires) {
      g.duplicates++;
      g.lastDuplicate = d.at;
      sim.duplicates.push({ source: d.source, at: d.at, ageSeconds: (d.at - g.start) / 1000 });
      continue;
    }
    let kind: Generation["kind"] = "claimed";
    if (g) {
      const pruned = prunedAt(g.expires);
      if (pruned === null || pruned > d.at) kind = "reclaimed_after_expiry";
      g.gone = kind === "reclaimed_after_expiry" ? d.at : pruned;
    }
    const next: Generation = {
      source: d.source,
      eventId: d.eventId,
      eventType: d.eventType,
      start: d.at,
      kind,
      expires: d.at + ttlMs.get(d.source)!,
      gone: null,
      duplicates: 0,
      lastDuplicate: null,
      viaReplay: d.viaReplay,
    };
    current.set(key, next);
    sim.generations.push(next);
  }
  // Keys still stored at the end are pruned if a run came after their expiry.
  for (const g of current.values()) if (g.gone === null && g.expires <= now) g.gone = prunedAt(g.expires);

  const rowsByRun = new Map<number, number>();
  const ok = new Set(okRuns);
  for (const g of sim.generations) {
    if (g.gone !== null && ok.has(g.gone)) rowsByRun.set(g.gone, (rowsByRun.get(g.gone) ?? 0) + 1);
  }
  sim.pruneRuns = runTimes.map((at) => ({
    at,
    rows: rowsByRun.get(at) ?? 0,
    error: failed.has(at) ? "canceling statement due to statement timeout" : null,
  }));
  return sim;
}

/** Per minute (ms of its start) and source: claims, duplicates and the duplicates' age histogram. Pure. */
export function perMinute(sim: Simulation) {
  type Cell = { claimed: number; duplicate: number; counts: number[]; max: number };
  const cells = new Map<string, Cell>();
  const cell = (source: string, at: number) => {
    const minute = Math.floor(at / 60_000) * 60_000;
    const k = `${minute}|${source}`;
    let c = cells.get(k);
    if (!c) cells.set(k, (c = { claimed: 0, duplicate: 0, counts: new Array<number>(BUCKET_COUNT).fill(0), max: 0 }));
    return c;
  };
  for (const g of sim.generations) cell(g.source, g.start).claimed++;
  for (const d of sim.duplicates) {
    const c = cell(d.source, d.at);
    c.duplicate++;
    c.counts[bucketIndex(d.ageSeconds)]++;
    c.max = Math.max(c.max, d.ageSeconds);
  }
  return [...cells.entries()].map(([k, c]) => {
    const [minute, source] = k.split("|");
    return { minute: Number(minute), source, ...c };
  });
}

/**
 * One metrics sample per minute: per source alive keys (claimed, not expired), backlog (expired, not
 * yet deleted), claims and duplicates of the minute before; the table's rows and an assumed size. Pure.
 */
export function samplesOf(sim: Simulation, bytesPerKey = 310) {
  const first = Math.ceil(sim.from / 60_000) + 1;
  const last = Math.floor(sim.to / 60_000);
  const n = last - first + 1;
  const idx = (t: number) => Math.min(n, Math.max(0, Math.ceil(t / 60_000) - first));
  const per = new Map<string, { alive: Int32Array; backlog: Int32Array; claims: Int32Array; dups: Int32Array }>();
  for (const s of DEMO_SOURCES) per.set(s.name, { alive: new Int32Array(n + 1), backlog: new Int32Array(n + 1), claims: new Int32Array(n + 1), dups: new Int32Array(n + 1) });
  for (const g of sim.generations) {
    const p = per.get(g.source)!;
    const end = g.gone ?? Number.POSITIVE_INFINITY;
    p.alive[idx(g.start)]++;
    p.alive[idx(Math.min(g.expires, end))]--;
    if (end > g.expires) {
      p.backlog[idx(g.expires)]++;
      p.backlog[idx(end)]--;
    }
    // claims of the minute before sample i are those in [i−1, i)
    const m = Math.floor(g.start / 60_000) + 1 - first;
    if (m >= 0 && m < n) p.claims[m]++;
  }
  for (const d of sim.duplicates) {
    const m = Math.floor(d.at / 60_000) + 1 - first;
    if (m >= 0 && m < n) per.get(d.source)!.dups[m]++;
  }
  const out: { at: number; rows: number; alive: number; backlog: number; claims: number; duplicates: number; bytes: number; perSource: Record<string, unknown> }[] = [];
  const run = new Map<string, { alive: number; backlog: number }>(DEMO_SOURCES.map((s) => [s.name, { alive: 0, backlog: 0 }]));
  for (let i = 0; i < n; i++) {
    const perSource: Record<string, unknown> = {};
    let alive = 0;
    let backlog = 0;
    let claims = 0;
    let duplicates = 0;
    for (const s of DEMO_SOURCES) {
      const p = per.get(s.name)!;
      const r = run.get(s.name)!;
      r.alive += p.alive[i];
      r.backlog += p.backlog[i];
      alive += r.alive;
      backlog += r.backlog;
      claims += p.claims[i];
      duplicates += p.dups[i];
      perSource[s.name] = { claims: p.claims[i], duplicates: p.dups[i], aliveKeys: r.alive, expiryBacklog: r.backlog, inFlight: 0, keysEstimated: false };
    }
    const rows = alive + backlog;
    out.push({ at: (first + i) * 60_000, rows, alive, backlog, claims, duplicates, bytes: 180_000 + rows * bytesPerKey, perSource });
  }
  return out;
}
