/**
 * Fills an empty demo database (`keyward demo`, ./.keyward-demo/) with a few days of realistic history:
 * the three senders of simulate.ts with their keys, audit history, claim counts, duplicate ages and
 * metric samples; pruning runs (two failed); dead letters; one finished replay; then the late-duplicate
 * job reads the history once, so the console shows everything on first load. Runs once per data
 * directory (settings key `demo.seeded_at`); never against a configured DATABASE_URL (demo.ts).
 */
import { z } from "zod";
import { parseInput } from "@/lib/http/validate";
import { createSourceRequest } from "@/lib/sources/schema";
import { randomUUID } from "node:crypto";
import { execute, query } from "@/lib/db/sql";
import { database, type Db } from "@/lib/db/transaction";
import { cliPrincipal } from "@/lib/auth/principal";
import { createUser } from "@/lib/auth/users";
import { createApiKey } from "@/lib/auth/api-keys";
import { createSource } from "@/lib/sources/sources";
import { detectLateDuplicates } from "@/lib/retention/late-duplicates";
import { DEMO_SOURCES, perMinute, samplesOf, seeded, simulate, type ExtraDelivery, type Simulation } from "./simulate";

export const DEMO_DAYS = 4;
export const DEMO_USER = { username: "demo", password: "keyward-demo" };
const SEEDED_KEY = "demo.seeded_at";
const CHUNK = 4000;

const H = 3600_000;
/** The demo replay's attempts: sent this long before the receiver's claim, answered (and settled) this long after it. */
const SENT_BEFORE_CLAIM_SECONDS = 0.15;
const ANSWERED_AFTER_CLAIM_SECONDS = 0.1;

/** Whether this database was seeded already. */
export async function isSeeded(): Promise<boolean> {
  const rows = await query(z.object({ value: z.string() }), "SELECT value FROM settings WHERE key = $1", [SEEDED_KEY]);
  return rows.length > 0;
}

async function inChunks<T>(rows: readonly T[], write: (chunk: readonly T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < rows.length; i += CHUNK) await write(rows.slice(i, i + CHUNK));
}

const col = <T, V>(rows: readonly T[], f: (r: T) => V) => rows.map(f);
const iso = (ms: number) => new Date(ms).toISOString();

type Letter = { id: string; source: string; eventId: string; eventType: string; failedAt: number; error: string; attempts: number; replayed: boolean };

/** Seeds the demo history; `log` reports progress. Returns what it wrote. */
export async function seedDemo(log: (msg: string) => void = () => {}, db: Db = database()): Promise<{ keys: number; claims: number; duplicates: number; lateDuplicates: number }> {
  const [{ now }] = await query(z.object({ now: z.date() }), "SELECT now() AS now");
  const nowMs = now.getTime();
  const rand = seeded(7);
  const replayAt = nowMs - 20 * H;
  const letters: Letter[] = [];

  // The replay of orders 20 hours ago re-drove three events whose keys had expired (forced, with a reason)
  // and three that had never been processed: their receiver claimed each as it arrived.
  const extra = (sim: Simulation): ExtraDelivery[] => {
    const orders = sim.events.get("orders")!;
    const out: ExtraDelivery[] = [];
    const old = orders.filter((e) => e.first < replayAt - 30 * H).slice(-40);
    for (let i = 0; i < 3; i++) {
      const e = old[i * 7];
      letters.push({ id: randomUUID(), source: "orders", eventId: e.eventId, eventType: e.eventType, failedAt: e.first + 90_000, error: "TypeError: Cannot read properties of undefined (reading 'sku')", attempts: 5, replayed: true });
      out.push({ source: "orders", eventId: e.eventId, eventType: e.eventType, at: replayAt + (i + 1) * 400, viaReplay: true });
    }
    for (let i = 0; i < 3; i++) {
      const eventId = `ord_dlq_${(9000 + i).toString(36)}`;
      letters.push({ id: randomUUID(), source: "orders", eventId, eventType: "order.paid", failedAt: replayAt - (5 + i) * H, error: "POST https://fulfilment.internal/hooks/orders: 503 Service Unavailable", attempts: 5, replayed: true });
      out.push({ source: "orders", eventId, eventType: "order.paid", at: replayAt + (i + 4) * 400, viaReplay: true });
    }
    return out;
  };

  log(`simulating ${DEMO_DAYS} days of three senders`);
  const sim = simulate(nowMs, DEMO_DAYS, { failedPrunes: [nowMs - 3 * H, nowMs - 26 * H], extra });

  log("sources and the demo admin");
  const actor = cliPrincipal();
  for (const s of DEMO_SOURCES) {
    await createSource(parseInput(createSourceRequest, { name: s.name, ...s.parts, ...(s.preset ? { preset: s.preset } : {}), ...(s.name === "orders" ? { deadLetterRetentionSeconds: 3 * 86400 } : {}) }), actor);
  }
  await db.prisma.source.update({ where: { name: "orders" }, data: { replayDestination: "https://fulfilment.internal/hooks/orders/replay" } });
  // The API keys the audit history names as actors: each sender's service, and each dead-letter queue's.
  for (const s of DEMO_SOURCES) {
    await createApiKey({ name: s.actor.replace(/^apikey:/, ""), scopes: ["claims:write"] }, actor);
    await createApiKey({ name: `${s.name}-dlq`, scopes: ["deadletters:write"] }, actor);
  }
  const existing = await query(z.object({}), "SELECT 1 FROM auth_users WHERE username = $1", [DEMO_USER.username]);
  if (existing.length === 0) await createUser({ username: DEMO_USER.username, role: "admin", password: DEMO_USER.password }, actor);

  log(`audit history: ${sim.generations.length} claims`);
  const actorOf = new Map(DEMO_SOURCES.map((s) => [s.name, s.actor]));
  await inChunks(sim.generations, (rows) =>
    execute(
      `INSERT INTO audit_events (at, source, event_id, event_type, kind, actor, detail)
       SELECT at, source, event_id, event_type, kind, actor, jsonb_build_object('expiresAt', expires)
       FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
         AS t(at, source, event_id, event_type, kind, actor, expires)`,
      [
        col(rows, (g) => iso(g.start)),
        col(rows, (g) => g.source),
        col(rows, (g) => g.eventId),
        col(rows, (g) => g.eventType),
        col(rows, (g) => g.kind),
        col(rows, (g) => (g.viaReplay ? "apikey:fulfilment" : actorOf.get(g.source)!)),
        col(rows, (g) => iso(g.expires)),
      ],
    ),
  );

  const stored = sim.generations.filter((g) => g.gone === null);
  log(`dedup keys: ${stored.length}`);
  await inChunks(stored, (rows) =>
    execute(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, received_at, expires_at, duplicate_count, last_duplicate_at)
       SELECT source, event_id, event_type, 'done', gen_random_uuid(), kind, received, expires, dups, last_dup
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::int[], $8::timestamptz[])
         AS t(source, event_id, event_type, kind, received, expires, dups, last_dup)`,
      [
        col(rows, (g) => g.source),
        col(rows, (g) => g.eventId),
        col(rows, (g) => g.eventType),
        col(rows, (g) => g.kind),
        col(rows, (g) => iso(g.start)),
        col(rows, (g) => iso(g.expires)),
        col(rows, (g) => g.duplicates),
        col(rows, (g) => (g.lastDuplicate === null ? null : iso(g.lastDuplicate))),
      ],
    ),
  );

  const minutes = perMinute(sim);
  log(`claim counts and duplicate ages: ${minutes.length} source-minutes`);
  await inChunks(minutes, (rows) =>
    execute(
      `WITH t AS (SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::int[], $4::int[], $6::float8[]) WITH ORDINALITY
                    AS t(bucket, source, claimed, duplicate, max_age, i)),
       counts AS (INSERT INTO claim_counts (bucket, source, claimed, duplicate) SELECT bucket, source, claimed, duplicate FROM t)
       INSERT INTO duplicate_ages (bucket, source, counts, max_age_seconds)
       SELECT bucket, source, ($5::int[])[(i - 1) * 15 + 1 : i * 15], max_age FROM t WHERE duplicate > 0`,
      [
        col(rows, (m) => iso(m.minute)),
        col(rows, (m) => m.source),
        col(rows, (m) => m.claimed),
        col(rows, (m) => m.duplicate),
        rows.flatMap((m) => m.counts),
        col(rows, (m) => m.max),
      ],
    ),
  );

  const samples = samplesOf(sim);
  log(`metric samples: ${samples.length}`);
  await inChunks(samples, (rows) =>
    execute(
      `INSERT INTO metric_samples (at, table_bytes, index_bytes, estimated_rows, alive_keys, expiry_backlog, backlog_capped,
                                   in_flight, claims, duplicates, per_source)
       SELECT at, bytes, round(bytes * 0.42)::int8, rows_, alive, backlog, false, 0, claims, dups, per_source
       FROM unnest($1::timestamptz[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], $8::jsonb[])
         AS t(at, bytes, rows_, alive, backlog, claims, dups, per_source)
       ON CONFLICT (at) DO NOTHING`,
      [
        col(rows, (s) => iso(s.at)),
        col(rows, (s) => s.bytes),
        col(rows, (s) => s.rows),
        col(rows, (s) => s.alive),
        col(rows, (s) => s.backlog),
        col(rows, (s) => s.claims),
        col(rows, (s) => s.duplicates),
        col(rows, (s) => JSON.stringify(s.perSource)),
      ],
    ),
  );

  log(`pruning runs: ${sim.pruneRuns.length}`);
  await inChunks(sim.pruneRuns, (rows) =>
    execute(
      `INSERT INTO prune_runs (started_at, finished_at, mode, trigger, actor, batches, rows, stopped, error)
       SELECT s, s + make_interval(secs => d), 'batch', 'schedule', 'schedule@demo', CASE WHEN r > 0 THEN 1 ELSE 0 END, r,
              CASE WHEN e IS NULL THEN 'drained' ELSE 'error' END, e
       FROM unnest($1::timestamptz[], $2::float8[], $3::int8[], $4::text[]) AS t(s, d, r, e)`,
      [
        col(rows, (r) => iso(r.at)),
        col(rows, (r) => (r.error ? 5 : 0.02 + r.rows / 40_000 + rand() * 0.05)),
        col(rows, (r) => r.rows),
        col(rows, (r) => r.error),
      ],
    ),
  );

  log("dead letters and a finished replay");
  await seedDeadLetters(sim, letters, replayAt, rand);

  log("late duplicates");
  const found = await detectLateDuplicates({ start: new Date(sim.from - 60_000), settleSeconds: 0, budgetMs: 600_000 });
  await execute("INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", [SEEDED_KEY, now.toISOString()]);
  return { keys: stored.length, claims: sim.generations.length, duplicates: sim.duplicates.length, lateDuplicates: found.found };
}

async function seedDeadLetters(sim: Simulation, replayed: Letter[], replayAt: number, rand: () => number): Promise<void> {
  const nowMs = sim.to;
  const letters = [...replayed];
  const pending: [string, number, string][] = [
    ["orders", 4, "POST https://fulfilment.internal/hooks/orders: 503 Service Unavailable"],
    ["stripe", 3, "timeout after 10000 ms waiting for the ledger service"],
    ["github", 2, "HTTP 422 from the CI runner: unknown repository"],
  ];
  for (const [source, n, error] of pending) {
    const events = sim.events.get(source)!;
    for (let i = 0; i < n; i++) {
      const e = events[events.length - 1 - Math.floor(rand() * 90)];
      letters.push({ id: randomUUID(), source, eventId: e.eventId, eventType: e.eventType, failedAt: Math.min(nowMs - 60_000, e.first + 120_000), error, attempts: 3 + i, replayed: false });
    }
  }
  const payload = (l: Letter) => Buffer.from(JSON.stringify({ id: l.eventId, type: l.eventType, created: Math.floor(l.failedAt / 1000), data: { object: { amount: 1999, currency: "eur" } } }));
  await execute(
    `WITH t AS (SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[], $7::int[], $8::timestamptz[], $9::bool[])
                  AS t(id, source, event_id, event_type, payload, error, attempts, failed_at, replayed)),
     dl AS (INSERT INTO dead_letters (id, source, event_id, event_type, payload, payload_bytes, content_type, error, attempts, failed_at, queue,
                                      status, received_at, settled_at)
            SELECT id, source, event_id, event_type, payload, length(payload), 'application/json', error, attempts, failed_at, source || '-dlq',
                   CASE WHEN replayed THEN 'delivered' ELSE 'pending' END, failed_at,
                   CASE WHEN replayed THEN $10::timestamptz + interval '5 seconds' END
            FROM t)
     INSERT INTO audit_events (at, source, event_id, event_type, kind, actor, detail)
     SELECT failed_at, source, event_id, event_type, 'dead_lettered', 'apikey:' || source || '-dlq',
            jsonb_build_object('deadLetterId', id, 'attempts', attempts, 'failedAt', failed_at, 'error', error)
     FROM t`,
    [
      col(letters, (l) => l.id),
      col(letters, (l) => l.source),
      col(letters, (l) => l.eventId),
      col(letters, (l) => l.eventType),
      col(letters, payload),
      col(letters, (l) => l.error),
      col(letters, (l) => l.attempts),
      col(letters, (l) => iso(l.failedAt)),
      col(letters, (l) => l.replayed),
      iso(replayAt),
    ],
  );

  // The finished replay of orders: its preflight, the replay, and each item in the order a real replay
  // leaves it: the attempt sent (SENT_BEFORE_CLAIM before the receiver's claim, which simulate.ts made
  // seq × 400 ms after the start), the claim, then the 200 answered and the item settled and audited as
  // `replayed` (ANSWERED_AFTER_CLAIM after the claim: the late-duplicate job recognises a replay's reclaim
  // by a `replayed` row at or after it), the dead letter delivered then; its start and end in the action
  // log as the console records them. So no replayed letter reads as processed before its replay was sent.
  const items = replayed.map((l, i) => ({ ...l, seq: i + 1, category: i < 3 ? "expired_processed" : "never_processed" }));
  const [pf] = await query(
    z.object({ id: z.string() }),
    `INSERT INTO replay_preflights (source, created_at, valid_until, window_seconds, extended_at, created_by)
     VALUES ('orders', $1::timestamptz - interval '4 minutes', $1::timestamptz + interval '11 minutes', 3600, NULL, 'user:demo') RETURNING id`,
    [iso(replayAt)],
  );
  await execute(
    `INSERT INTO replay_preflight_items (preflight_id, dead_letter_id, seq, event_id, event_type, category, processed_at, reason)
     SELECT $1, id, seq, event_id, event_type, category, NULL,
            CASE WHEN category = 'expired_processed' THEN 'processed before, and its key has expired: a replay processes it twice'
                 ELSE 'never processed: safe to replay' END
     FROM unnest($2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[]) AS t(id, seq, event_id, event_type, category)`,
    [pf.id, col(items, (i) => i.id), col(items, (i) => i.seq), col(items, (i) => i.eventId), col(items, (i) => i.eventType), col(items, (i) => i.category)],
  );
  const [replay] = await query(
    z.object({ id: z.string() }),
    `INSERT INTO replays (source, preflight_id, include, forced, force_reason, rate_per_second, concurrency, status, created_by, created_at,
                          finished_at, total, idempotency_key, request_hash, destination)
     VALUES ('orders', $1, ARRAY['never_processed', 'expired_processed'], true,
             'incident: the fulfilment handler crashed on orders without a SKU; reprocess after the fix', 50, 4, 'completed', 'user:demo',
             $2::timestamptz, $2::timestamptz + interval '6 seconds', $3, $4, 'demo', 'https://fulfilment.internal/hooks/orders/replay')
     RETURNING id`,
    [pf.id, iso(replayAt), items.length, randomUUID()],
  );
  await execute(
    `WITH t AS (SELECT * FROM unnest($2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[]) AS t(id, seq, event_id, event_type, category)),
     it AS (INSERT INTO replay_items (replay_id, dead_letter_id, seq, event_id, category, outcome, attempts, last_status, next_attempt_at, finished_at)
            SELECT $1, id, seq, event_id, category, 'delivered', 1, 200, $7::timestamptz + make_interval(secs => seq * 0.4 - $8::float8),
                   $7::timestamptz + make_interval(secs => seq * 0.4 + $9::float8) FROM t),
     attempts AS (INSERT INTO replay_attempts (replay_id, dead_letter_id, attempt, at, destination, status, latency_ms, response_body, outcome,
                                               request_headers, response_headers)
            SELECT $1, id, 1, $7::timestamptz + make_interval(secs => seq * 0.4 - $8::float8), 'https://fulfilment.internal/hooks/orders/replay', 200,
                   round(($8::float8 + $9::float8) * 1000)::int, '{"received":true}', 'delivered',
                   jsonb_build_array(jsonb_build_array('content-type', 'application/json'), jsonb_build_array('webhook-id', event_id),
                                     jsonb_build_array('webhook-signature', 'v1,***')),
                   jsonb_build_array(jsonb_build_array('content-type', 'application/json'))
            FROM t),
     settled AS (UPDATE dead_letters d SET settled_at = $7::timestamptz + make_interval(secs => t.seq * 0.4 + $9::float8) FROM t WHERE d.id = t.id)
     INSERT INTO audit_events (at, source, event_id, event_type, kind, actor, detail)
     SELECT $7::timestamptz + make_interval(secs => seq * 0.4 + $9::float8), 'orders', event_id, event_type, 'replayed', 'user:demo',
            jsonb_build_object('replayId', $1::uuid, 'deadLetterId', id, 'outcome', 'delivered', 'attempts', 1, 'status', 200, 'forced', true)
     FROM t`,
    [
      replay.id,
      col(items, (i) => i.id),
      col(items, (i) => i.seq),
      col(items, (i) => i.eventId),
      col(items, (i) => i.eventType),
      col(items, (i) => i.category),
      iso(replayAt),
      SENT_BEFORE_CLAIM_SECONDS,
      ANSWERED_AFTER_CLAIM_SECONDS,
    ],
  );
  const byCategory = { expired_processed: items.filter((i) => i.category === "expired_processed").length, never_processed: items.filter((i) => i.category === "never_processed").length };
  await execute(
    `INSERT INTO audit_events (at, source, kind, actor, detail) VALUES
       ($1::timestamptz, 'orders', 'operator', 'user:demo', $2::jsonb),
       ($1::timestamptz + interval '6 seconds', 'orders', 'operator', 'system:replay-worker', $3::jsonb)`,
    [
      iso(replayAt),
      JSON.stringify({
        action: "replay.start",
        outcome: "ok",
        target: { type: "replay", id: replay.id },
        reason: "incident: the fulfilment handler crashed on orders without a SKU; reprocess after the fix",
        after: { preflightId: pf.id, include: ["never_processed", "expired_processed"], total: items.length, byCategory, forced: true, ratePerSecond: 50, concurrency: 4 },
      }),
      JSON.stringify({
        action: "replay.complete",
        outcome: "ok",
        target: { type: "replay", id: replay.id },
        after: { total: items.length, counts: { pending: 0, delivering: 0, delivered: items.length, failed: 0, skipped_unsafe: 0, cancelled: 0 } },
      }),
    ],
  );
}
