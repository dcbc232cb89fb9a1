/**
 * GET /metrics against a real server on a database of this file's own (it prunes): scraped with an API
 * key of scope metrics and with KEYWARD_METRICS_TOKEN, refused without credentials (401), with a wrong
 * token (401) and with a claims key (403); the exposition parses as Prometheus text format, and its
 * values follow claims (in-process counter and latency histogram), samples (table rows, expiry backlog),
 * prune runs, dead letters and the inlets' lag (labelled by kind).
 */
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { recordDeadLetter, recordInletLetters } from "@/lib/deadletters/intake";
import { parseInput } from "@/lib/http/validate";
import { createInletRequest } from "@/lib/inlets/schema";
import { createInlet, reportInlet } from "@/lib/inlets/inlets";
import { takeSample } from "@/lib/metrics/sampler";
import { pruneExpiredKeys } from "@/lib/retention/prune";
import { actorOf } from "@/lib/auth/principal";
import { hasScope } from "@/lib/auth/schema";
import { loadEnv } from "@/lib/config/env";
import { call, startTestServer } from "@/test/setup/auth";
import { makeSource, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { insertKeys } from "@/test/setup/keys";
import { stopServer, type Server } from "@/test/setup/server";
import { seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";
import { sql } from "@/test/setup/db";


const TOKEN = "metrics-token-for-the-test-0123456789abcdef";
const spawned: Server[] = [];
let baseUrl: string;
let metricsKey: string;
let claimsKey: string;

type Family = { name: string; type: string; metrics: { labels?: Record<string, string>; value?: string; count?: string; buckets?: Record<string, string> }[] };

type Scrape = Family[] & { text: string };

async function scrape(auth: string): Promise<Scrape> {
  const res = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${auth}` } });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return Object.assign(parsePrometheusTextFormat(text) as Family[], { text });
}

/**
 * A histogram's sample count, read from the text: parse-prometheus-text-format drops the labels, `_count`
 * and `_sum` of a labelled histogram (it keeps only the buckets of the last series).
 */
function histogramCount(s: Scrape, name: string, route: string): number {
  const m = new RegExp(`^${name}_count\\{route="${route}"\\} (\\S+)$`, "m").exec(s.text);
  return m ? Number(m[1]) : 0;
}

function value(families: Family[], name: string, labels: Record<string, string> = {}): number | undefined {
  const family = families.find((f) => f.name === name);
  if (!family) throw new Error(`no metric family ${name}`);
  const m = family.metrics.find((s) => Object.entries(labels).every(([k, v]) => s.labels?.[k] === v));
  return m?.value === undefined ? (m?.count === undefined ? undefined : Number(m.count)) : Number(m.value);
}

beforeAll(async () => {
  ({ baseUrl } = await startTestServer(spawned, { KEYWARD_METRICS_TOKEN: TOKEN, KEYWARD_SAMPLE_INTERVAL_SECONDS: "0" }));
  metricsKey = (await makeApiKey(["metrics"])).key;
  claimsKey = (await makeApiKey(["claims:write"])).key;
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

describe("GET /metrics", () => {
  it("KEYWARD_METRICS_TOKEN must be at least 32 characters; scope metrics is implied by read and operator only", () => {
    expect(() => loadEnv({ NODE_ENV: "test", KEYWARD_METRICS_TOKEN: "too-short" })).toThrow(/KEYWARD_METRICS_TOKEN: must be at least 32 characters/);
    expect(loadEnv({ NODE_ENV: "test", KEYWARD_METRICS_TOKEN: "" }).KEYWARD_METRICS_TOKEN).toBeUndefined();
    expect(hasScope(["read"], "metrics")).toBe(true);
    expect(hasScope(["operator"], "metrics")).toBe(true);
    expect(hasScope(["claims:write"], "metrics")).toBe(false);
    expect(hasScope(["metrics"], "read")).toBe(false);
  });


  it("is refused without credentials (401), with a wrong token (401) and with a claims key (403)", async () => {
    const none = await call(baseUrl, "GET", "/metrics");
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe("unauthorized");
    expect((await call(baseUrl, "GET", "/metrics", { key: `${TOKEN}x` })).status).toBe(401);
    const claims = await call(baseUrl, "GET", "/metrics", { key: claimsKey });
    expect(claims.status).toBe(403);
    expect(claims.body.error.code).toBe("forbidden");
  });

  it("parses, and its values follow claims, samples, prunes and dead letters", async () => {
    const source = await makeSource();
    const families = await scrape(TOKEN);
    for (const name of [
      "keyward_claims_total",
      "keyward_claim_duration_seconds",
      "keyward_dedup_table_bytes",
      "keyward_dedup_table_rows",
      "keyward_expiry_backlog",
      "keyward_prune_runs",
      "keyward_prune_rows",
      "keyward_replay_items",
      "keyward_dead_letters_pending",
    ]) {
      expect(families.map((f) => f.name)).toContain(name);
    }
    expect(value(families, "keyward_claims_total", { source })).toBeUndefined();
    expect(families.find((f) => f.name === "keyward_claim_duration_seconds")?.type).toBe("HISTOGRAM");
    const latencyBefore = histogramCount(families, "keyward_claim_duration_seconds", "claim");

    // Claims through the API: 2 claimed, 1 duplicate; a batch of 2 claimed.
    const claim = (eventId: string) => call(baseUrl, "POST", "/api/v1/claims", { key: claimsKey, body: { source, eventId, eventType: "t" } });
    expect((await claim("a")).status).toBe(201);
    expect((await claim("b")).status).toBe(201);
    expect((await claim("a")).status).toBe(200);
    const batch = await call(baseUrl, "POST", "/api/v1/claims/batch", {
      key: claimsKey,
      body: { source, events: [{ eventId: "c", eventType: "t" }, { eventId: "d", eventType: "t" }] },
    });
    expect(batch.status).toBe(200);

    // 7 expired keys, sampled (the exposition reads the latest sample, not the table), then pruned.
    await insertKeys(source, 7, "now() - interval '1 hour' + i * interval '1 ms'", "old-");
    const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 3_600_000);
    expect((await takeSample({ at: minute })).outcome).toBe("written");
    const pruned = await pruneExpiredKeys({ trigger: "cli", actor: actorOf(cliPrincipal()) });
    expect("skipped" in pruned).toBe(false);
    await recordDeadLetter({ source, eventId: uniq("dl"), eventType: "t", payload: { a: 1 }, error: "boom" }, "cli:test");

    const after = await scrape(metricsKey);
    expect(value(after, "keyward_claims_total", { source, outcome: "claimed" })).toBe(4);
    expect(value(after, "keyward_claims_total", { source, outcome: "duplicate" })).toBe(1);
    expect(histogramCount(after, "keyward_claim_duration_seconds", "claim")).toBe(latencyBefore + 3);
    expect(histogramCount(after, "keyward_claim_duration_seconds", "batch")).toBeGreaterThanOrEqual(1);
    expect(value(after, "keyward_expiry_backlog")).toBe(7);
    expect(value(after, "keyward_dedup_table_rows")).toBeGreaterThanOrEqual(0);
    expect(value(after, "keyward_dedup_table_bytes", { part: "table" })).toBeGreaterThan(0);
    expect(value(after, "keyward_metrics_sample_timestamp_seconds")).toBe(minute.getTime() / 1000);
    expect(value(after, "keyward_prune_runs", { outcome: "drained" })).toBeGreaterThanOrEqual(1);
    expect(value(after, "keyward_prune_rows", { outcome: "drained" })).toBeGreaterThanOrEqual(7);
    expect(value(after, "keyward_dead_letters_pending", { source })).toBe(1);

    // A newer sample, taken after the prune, shows the backlog gone.
    await takeSample({ at: new Date(minute.getTime() + 60_000) });
    expect(value(await scrape(TOKEN), "keyward_expiry_backlog")).toBe(0);
  });

  it("exports each inlet's lag as its consumer reported it, labelled by kind, and unidentified dead letters", async () => {
    const source = await makeSource();
    const inlet = await createInlet(source, parseInput(createInletRequest, { amqpUrl: "amqp://guest:guest@127.0.0.1:5672/", queue: uniq("q"), check: false }), cliPrincipal());
    const labels = { source, kind: "amqp", inlet: inlet.id };
    const jobs = await createInlet(
      source,
      parseInput(createInletRequest, { kind: "bullmq", redisUrl: "redis://127.0.0.1:6379", queue: uniq("q"), check: false }),
      cliPrincipal(),
    );
    const before = await scrape(TOKEN);
    expect(value(before, "keyward_inlet_up", labels)).toBe(0);
    expect(before.text).not.toContain(`keyward_inlet_lag_messages{source="${source}"`);

    await reportInlet(inlet.id, { state: "consuming", lagMessages: 17, consumed: 3, lastMessageAt: new Date(), lastMessageAgeSeconds: 2.5 });
    await recordInletLetters(
      [
        {
          source, inletId: inlet.id, eventId: "unidentified:x", eventType: "amqp.message", payload: Buffer.from("?"), contentType: "text/plain",
          error: "rejected in queue q", attempts: 1, failedAt: null, queue: "q", originExchange: "", originRoutingKey: "q", originKey: uniq("k"),
          unidentifiedReason: "the message has no message_id property",
        },
      ],
      "test",
    );
    const after = await scrape(metricsKey);
    expect(value(after, "keyward_inlet_up", labels)).toBe(1);
    expect(value(after, "keyward_inlet_lag_messages", labels)).toBe(17);
    expect(value(after, "keyward_inlet_lag_seconds", labels)).toBe(2.5);
    expect(value(after, "keyward_inlet_up", { source, kind: "bullmq", inlet: jobs.id })).toBe(0);
    expect(value(after, "keyward_dead_letters_unidentified", { source })).toBe(1);
    expect(value(after, "keyward_dead_letters_pending", { source })).toBeUndefined();
  });

  it("exports what the alerts read: claim answers by status, keys pruned, prune failures, dead letters' age and keys at risk, late duplicates, jobs", async () => {
    const source = await makeSource();
    const operatorKey = (await makeApiKey(["operator"])).key;
    const before = await scrape(TOKEN);
    const answers = (route: string, code: string) => value(before, "keyward_claim_responses_total", { route, code }) ?? 0;
    const created = answers("claim", "201");
    const refused = answers("claim", "422");

    const claim = (body: Record<string, unknown>) => call(baseUrl, "POST", "/api/v1/claims", { key: claimsKey, body: { source, eventType: "t", ...body } });
    expect((await claim({ eventId: "r1" })).status).toBe(201);
    expect((await claim({ eventId: "r2" })).status).toBe(201);
    expect((await claim({ eventId: "" })).status).toBe(422);

    // Dead letters: r1 processed and its key gone (at risk), r2's key expiring within the hour, r3 never claimed.
    await setKeyExpiry(source, "r1", -60);
    await setKeyExpiry(source, "r2", 3600);
    await seedDeadLetters(source, ["r1", "r2", "r3"]);
    await sql("UPDATE dead_letters SET received_at = now() - interval '2 hours' WHERE source = $1 AND event_id = 'r3'", [source]);
    // The server prunes r1's key: this process's counter counts it.
    const prunedBefore = value(before, "keyward_pruned_keys_total") ?? 0;
    const prune = await call(baseUrl, "POST", "/api/v1/maintenance/prune", { key: operatorKey, body: {} });
    expect(prune.status, prune.text).toBe(200);
    expect(prune.body.run.rows).toBeGreaterThanOrEqual(1);
    // Two failed runs after it (as an unreachable partition would leave them), and a late duplicate found a minute ago.
    await sql(
      `INSERT INTO prune_runs (mode, trigger, started_at, finished_at, stopped, error)
       SELECT 'batch', 'schedule', now() + i * interval '1 ms', now() + i * interval '1 ms', 'error', 'boom' FROM generate_series(1, 2) i`,
    );
    await sql(
      `INSERT INTO late_duplicates (source, event_id, first_claim_at, late_claim_at, gap_seconds, key_state)
       VALUES ($1, 'late-1', now() - interval '8 days', now() - interval '1 minute', 8 * 86400 - 60, 'pruned')`,
      [source],
    );
    const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 7_200_000);
    expect((await takeSample({ at: minute })).outcome).toBe("written");

    const after = await scrape(metricsKey);
    expect(value(after, "keyward_claim_responses_total", { route: "claim", code: "201" })).toBe(created + 2);
    expect(value(after, "keyward_claim_responses_total", { route: "claim", code: "422" })).toBe(refused + 1);
    expect(value(after, "keyward_pruned_keys_total")).toBe(prunedBefore + prune.body.run.rows);
    expect(value(after, "keyward_prune_consecutive_failures")).toBe(2);
    expect(value(after, "keyward_prune_last_success_timestamp_seconds")).toBeCloseTo(Date.parse(prune.body.run.finishedAt) / 1000, 2);
    expect(value(after, "keyward_dead_letters_pending", { source })).toBe(3);
    expect(value(after, "keyward_dead_letters_oldest_pending_age_seconds", { source })).toBeGreaterThanOrEqual(7200);
    expect(value(after, "keyward_dead_letter_keys_at_risk", { source, risk: "expired" })).toBe(1);
    expect(value(after, "keyward_dead_letter_keys_at_risk", { source, risk: "expiring" })).toBe(1);
    expect(value(after, "keyward_late_duplicates_last_hour", { source })).toBe(1);
    expect(value(after, "keyward_job_wedged", { name: "audit partition upkeep" })).toBe(0);
    // Without KEYWARD_REDIS_URL there is no Redis to be up or down.
    expect(after.text).not.toMatch(/^keyward_redis_up /m);
    // A run that succeeds again clears the failures.
    await sql("INSERT INTO prune_runs (mode, trigger, started_at, finished_at, stopped) VALUES ('batch', 'schedule', now() + interval '1 s', now() + interval '1 s', 'drained')");
    expect(value(await scrape(TOKEN), "keyward_prune_consecutive_failures")).toBe(0);
  });
});
