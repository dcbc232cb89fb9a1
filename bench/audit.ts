/**
 * The audit-search benchmark (BENCH_PARTS=audit): BENCH_AUDIT_ROWS audit rows (default 10M) spread over
 * the 12 monthly partitions before the current month, then, through the real server's HTTP API:
 *   - exact lookups by (source, event id): GET /api/v1/audit?source&eventId (default range: the whole
 *     retention, so every partition is probed through its (source, event_id, at) index) and the event
 *     page GET /api/v1/events/{source}/{eventId} (key + timeline), p50/p99 over sequential requests;
 *   - a one-day time-range page: GET /api/v1/audit?from&to (1 day, limit 100), and the same by source.
 * Also records the plans PostgreSQL chooses (EXPLAIN ANALYZE of the API's own statements).
 *
 * The past months are built as plain tables, filled with generate_series, then attached: attaching builds
 * each partition's indexes in bulk (much faster than maintaining 8 indexes row by row) and clones the
 * append-only trigger. keyward_ensure_audit_partitions only creates months from the current one ahead, so
 * the bench creates the past ones itself.
 */
import pg from "pg";
import { auditPageSql, resolveRange } from "@/lib/audit/search";
import { percentile } from "./stats";
import { startServer } from "./server";

export const AUDIT_START = "<!-- audit: written by bench/audit.ts -->";
export const AUDIT_END = "<!-- /audit -->";

const SOURCES = ["stripe", "github", "shopify", "twilio", "internal"];
const MONTHS = 12;

export type AuditBench = {
  rows: number;
  months: number;
  buildSeconds: number;
  tableBytes: number;
  indexBytes: number;
  results: { name: string; requests: number; p50: number; p99: number; max: number; aimMs?: number }[];
  plans: { name: string; plan: string }[];
};

const knob = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return Math.floor(v);
};

type Month = { start: string; end: string; name: string; index: number };

async function pastMonths(pool: pg.Pool): Promise<Month[]> {
  const { rows } = await pool.query<{ start: string; end: string; name: string; i: number }>(
    `SELECT to_char(m, 'YYYY-MM-DD') AS start, to_char(m + interval '1 month', 'YYYY-MM-DD') AS end,
            format('audit_events_%s', to_char(m, 'YYYY_MM')) AS name, i
     FROM generate_series(1, $1::int) AS i, LATERAL (SELECT date_trunc('month', now()) - make_interval(months => i) AS m) AS x
     ORDER BY m`,
    [MONTHS],
  );
  return rows.map((r) => ({ start: r.start, end: r.end, name: r.name, index: r.i }));
}

/** Event ids are `evt_<month>_<n>` with the source `SOURCES[n % 5]`: any (month, n) pair is a real row. */
const eventOf = (month: Month, n: number) => ({ source: SOURCES[n % SOURCES.length], eventId: `evt_${month.index}_${n}` });

async function build(pool: pg.Pool, months: Month[], perMonth: number, log: (m: string) => void): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query("SET synchronous_commit = off");
    await c.query("SET maintenance_work_mem = '256MB'");
    for (const m of months) {
      const t = performance.now();
      await c.query(`DROP TABLE IF EXISTS "${m.name}"`);
      await c.query(`CREATE TABLE "${m.name}" (LIKE audit_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
      // In time order (an append-only log): a claim per event, a completion for every third, a release
      // for every 50th; a detail like the claim statement's.
      await c.query(
        `INSERT INTO "${m.name}" (at, source, event_id, event_type, kind, actor, detail)
         SELECT $1::timestamptz + (($2::timestamptz - $1::timestamptz) * (n::float8 / $3)),
                (ARRAY['stripe','github','shopify','twilio','internal'])[(n / 2) % 5 + 1],
                'evt_' || $4::int || '_' || (n / 2),
                (ARRAY['invoice.paid','charge.failed','push','order.created','sms.sent','customer.updated'])[n % 6 + 1],
                CASE WHEN n % 2 = 0 THEN 'claimed' WHEN n % 100 = 1 THEN 'released' ELSE 'completed' END,
                'apikey:svc-' || (n % 20),
                CASE WHEN n % 2 = 0 THEN jsonb_build_object('expiresAt', $1::timestamptz + interval '7 days', 'payloadHash', md5(n::text)) END
         FROM generate_series(0, $3::int - 1) AS n`,
        [m.start, m.end, perMonth, m.index],
      );
      await c.query(`ALTER TABLE audit_events ATTACH PARTITION "${m.name}" FOR VALUES FROM ('${m.start}') TO ('${m.end}')`);
      log(`audit bench: ${m.name} (${perMonth.toLocaleString("en-US")} rows) built and attached in ${((performance.now() - t) / 1000).toFixed(0)} s`);
    }
    await c.query("ANALYZE audit_events");
  } finally {
    c.release();
  }
}

async function timed(requests: number, one: (i: number) => Promise<void>): Promise<number[]> {
  for (let i = 0; i < Math.min(30, requests); i++) await one(-1 - i); // warm-up, not counted
  const ms: number[] = [];
  for (let i = 0; i < requests; i++) {
    const t = performance.now();
    await one(i);
    ms.push(performance.now() - t);
  }
  return ms.sort((a, b) => a - b);
}

async function explain(pool: pg.Pool, { text, values }: { text: string; values: unknown[] }): Promise<string> {
  await pool.query(`EXPLAIN (ANALYZE, COSTS off) ${text}`, values); // the second run is the one shown: catalog caches warm
  const { rows } = await pool.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, COSTS off, SUMMARY on) ${text}`, values);
  const lines = rows.map((r) => r["QUERY PLAN"]);
  // Keep it readable: the first lines and the totals; partitions repeat the same node shape.
  const head = lines.filter((l) => !/^\s+(Index Cond|Filter|Rows Removed|Recheck|Heap Blocks|Buffers)/.test(l)).slice(0, 8);
  const tail = lines.filter((l) => /Planning Time|Execution Time|Subplans Removed/.test(l));
  const scans = lines.filter((l) => /Scan/.test(l)).length;
  return [...head, ...(head.length < lines.length ? [`  … (${scans} scan nodes in all)`] : []), ...tail.filter((l) => !head.includes(l))].join("\n");
}

export async function benchAudit(pool: pg.Pool, databaseUrl: string, apiKey: string, log: (m: string) => void): Promise<AuditBench> {
  const total = knob("BENCH_AUDIT_ROWS", 10_000_000);
  const lookups = knob("BENCH_AUDIT_LOOKUPS", 500);
  const perMonth = Math.ceil(total / MONTHS);
  const months = await pastMonths(pool);
  const t0 = performance.now();
  await build(pool, months, perMonth, log);
  const buildSeconds = (performance.now() - t0) / 1000;
  const [size] = (
    await pool.query<{ t: string; i: string }>(
      `SELECT sum(pg_table_size(c.oid))::bigint AS t, sum(pg_indexes_size(c.oid))::bigint AS i
       FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid WHERE h.inhparent = 'audit_events'::regclass`,
    )
  ).rows;

  log("audit bench: starting the server");
  const server = await startServer(databaseUrl);
  const headers = { authorization: `Bearer ${apiKey}` };
  const get = async (path: string, expectRows?: boolean) => {
    const res = await fetch(server.baseUrl + path, { headers });
    const body = (await res.json()) as { items?: unknown[]; timeline?: unknown[] };
    if (res.status !== 200) throw new Error(`${path} → ${res.status} ${JSON.stringify(body)}`);
    if (expectRows && !(body.items?.length || body.timeline?.length)) throw new Error(`${path} → no rows`);
  };
  const rand = (n: number) => Math.floor(Math.random() * n);
  const randomEvent = () => {
    const m = months[rand(months.length)];
    return eventOf(m, rand(perMonth / 2));
  };
  const results: AuditBench["results"] = [];
  const plans: AuditBench["plans"] = [];
  try {
    const record = (name: string, ms: number[], aimMs?: number) => {
      const r = { name, requests: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms[ms.length - 1], aimMs };
      results.push(r);
      log(`audit bench: ${name}: p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms (${ms.length} requests)`);
    };
    // The floor: the same server, key check and routing, and a trivial read (no audit query).
    record(
      "floor: GET /api/v1/presets (no audit query)",
      await timed(lookups, async () => {
        await get("/api/v1/presets");
      }),
    );
    record(
      "exact lookup GET /api/v1/audit?source&eventId",
      await timed(lookups, async () => {
        const e = randomEvent();
        await get(`/api/v1/audit?source=${e.source}&eventId=${encodeURIComponent(e.eventId)}`, true);
      }),
      20,
    );
    record(
      "event page GET /api/v1/events/{source}/{eventId}",
      await timed(lookups, async () => {
        const e = randomEvent();
        await get(`/api/v1/events/${e.source}/${encodeURIComponent(e.eventId)}`, true);
      }),
      20,
    );
    const dayOf = () => {
      const m = months[rand(months.length)];
      const from = new Date(Date.parse(`${m.start}T00:00:00Z`) + rand(27) * 86400_000);
      return { from: from.toISOString(), to: new Date(from.getTime() + 86400_000).toISOString() };
    };
    const pages = Math.max(50, Math.floor(lookups / 5));
    record(
      "one-day page GET /api/v1/audit?from&to (limit 100)",
      await timed(pages, async () => {
        const d = dayOf();
        await get(`/api/v1/audit?from=${d.from}&to=${d.to}&limit=100`, true);
      }),
      200,
    );
    record(
      "one-day page of one source, limit 500",
      await timed(pages, async () => {
        const d = dayOf();
        await get(`/api/v1/audit?source=stripe&from=${d.from}&to=${d.to}&limit=500`, true);
      }),
      200,
    );

    const e = eventOf(months[5], 12345);
    const now = new Date();
    const retention = 400;
    const exact = auditPageSql(e, resolveRange({ eventId: e.eventId }, now, retention), undefined, 101);
    plans.push({ name: "exact lookup (source, event id), whole retention", plan: await explain(pool, exact) });
    const d = { from: `${months[5].start}T00:00:00Z`, to: new Date(Date.parse(`${months[5].start}T00:00:00Z`) + 86400_000).toISOString() };
    const day = auditPageSql({}, resolveRange(d, now, retention), undefined, 101);
    plans.push({ name: "one-day page, no other filter", plan: await explain(pool, day) });
  } finally {
    await server.stop();
  }
  return { rows: perMonth * MONTHS, months: MONTHS, buildSeconds, tableBytes: Number(size.t), indexBytes: Number(size.i), results, plans };
}

const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;

export function auditText(b: AuditBench): string {
  return [
    `Audit search: ${b.rows.toLocaleString("en-US")} rows over ${b.months} monthly partitions (built in ${b.buildSeconds.toFixed(0)} s; tables ${gib(b.tableBytes)}, indexes ${gib(b.indexBytes)})`,
    ...b.results.map((r) => `  ${r.name.padEnd(52)} p50 ${r.p50.toFixed(1).padStart(7)} ms  p99 ${r.p99.toFixed(1).padStart(7)} ms${r.aimMs ? `  (aim p99 < ${r.aimMs} ms: ${r.p99 < r.aimMs ? "met" : "NOT met"})` : ""}`),
  ].join("\n");
}

export function auditMarkdown(b: AuditBench, when: string): string {
  return `${AUDIT_START}
## Audit search

Run ${when}, \`BENCH_PARTS=audit npm run bench\` (bench/audit.ts). ${b.rows.toLocaleString("en-US")} audit rows over
${b.months} monthly partitions (the 12 months before the current one; built with generate_series and attached, in
${b.buildSeconds.toFixed(0)} s; tables ${gib(b.tableBytes)}, indexes ${gib(b.indexBytes)}). Requests go one at a time through the
real server's HTTP API with an API key of scope \`read\` (authentication included); ids and days are random.
The "floor" row is the same server answering a request that reads no audit row: what is left above it is
the search itself. Compare the EXPLAIN times below with the HTTP times: on a loaded machine most of a
request's time is spent waiting for a core, not in PostgreSQL.

| Request | Requests | p50 | p99 | max | Aim |
| --- | ---: | ---: | ---: | ---: | --- |
${b.results
  .map(
    (r) =>
      `| ${r.name} | ${r.requests} | ${r.p50.toFixed(1)} ms | ${r.p99.toFixed(1)} ms | ${r.max.toFixed(1)} ms | ${r.aimMs ? `p99 < ${r.aimMs} ms: ${r.p99 < r.aimMs ? "met" : "**not met**"}` : ""} |`,
  )
  .join("\n")}

The plans PostgreSQL chose for the API's own statements (EXPLAIN ANALYZE, after the run, with the filter
values inlined as a first execution sees them). Planning the exact lookup over every partition and its
indexes costs more than running it, which is why the search and event statements are prepared (planned
once per connection; partitions are then pruned at execution):

${b.plans.map((p) => `${p.name}:\n\n\`\`\`\n${p.plan}\n\`\`\``).join("\n\n")}
${AUDIT_END}
`;
}

export function spliceAuditSection(doc: string, section: string): string {
  const i = doc.indexOf(AUDIT_START);
  const j = doc.indexOf(AUDIT_END);
  if (i >= 0 && j > i) return doc.slice(0, i) + section.trimEnd() + doc.slice(j + AUDIT_END.length);
  return `${doc.trimEnd()}\n\n${section}`;
}
