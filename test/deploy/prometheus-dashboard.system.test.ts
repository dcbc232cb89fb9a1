/**
 * The dashboard and the rules against a real Prometheus (Debian's `prometheus`, on a port and a data
 * directory of this test's own) scraping a real `keyward start` with Redis on, while the test sends it
 * traffic: first claims, duplicates, batches, a refused claim, dead letters (one whose key is gone, one
 * with a live key), a prune, an inlet's lag, a late duplicate, a metrics sample. Then every query of
 * every panel of deploy/grafana/keyward.json (its template variables substituted as Grafana would) and
 * every recording rule of deploy/prometheus/keyward-rules.yml is evaluated through Prometheus' HTTP API:
 * each must parse and return series. The rule groups must evaluate without error.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parse } from "yaml";
import { cliPrincipal } from "@/lib/auth/principal";
import { createInlet, reportInlet } from "@/lib/inlets/inlets";
import { createInletRequest } from "@/lib/inlets/schema";
import { parseInput } from "@/lib/http/validate";
import { takeSample } from "@/lib/metrics/sampler";
import { call, startTestServer } from "@/test/setup/auth";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { insertKeys } from "@/test/setup/keys";
import { seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";
import { reservePort, ROOT, stopServer, type Server } from "@/test/setup/server";


const TOKEN = "dashboard-test-metrics-token-0123456789abcdef";
const spawned: Server[] = [];
let baseUrl: string;
let promUrl: string;
let prometheus: ChildProcess | undefined;
let promOutput = "";
let dataDir: string;
let source: string;
let claimsKey: string;
let traffic: { stop: boolean; done?: Promise<void> } = { stop: false };

type Panel = { type: string; title: string; targets?: { expr: string; refId: string }[]; panels?: Panel[] };
type Dashboard = { panels: Panel[]; templating: { list: { name: string; type: string; query?: unknown; definition?: string }[] } };
type PromAnswer = { status: string; error?: string; data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] } };

const dashboard = JSON.parse(readFileSync(path.join(ROOT, "deploy/grafana/keyward.json"), "utf8")) as Dashboard;
const rules = (parse(readFileSync(path.join(ROOT, "deploy/prometheus/keyward-rules.yml"), "utf8")) as { groups: { rules: { record?: string }[] }[] }).groups
  .flatMap((g) => g.rules)
  .filter((r) => r.record)
  .map((r) => r.record!);

/** Every panel query, with the template variables replaced as Grafana does for "All" (and its built-ins). */
function panelQueries(): { panel: string; expr: string }[] {
  const all = (ps: Panel[]): Panel[] => ps.flatMap((p) => [p, ...all(p.panels ?? [])]);
  return all(dashboard.panels).flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      panel: `${p.title} (${t.refId})`,
      expr: t.expr.replaceAll("$source", ".*").replaceAll("$__rate_interval", "1m").replaceAll("$__interval", "15s"),
    })),
  );
}

async function promQuery(expr: string): Promise<PromAnswer> {
  const res = await fetch(`${promUrl}/api/v1/query?${new URLSearchParams({ query: expr })}`);
  return (await res.json()) as PromAnswer;
}

async function scrapeText(): Promise<string> {
  const res = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return res.text();
}

beforeAll(async () => {
  ({ baseUrl } = await startTestServer(spawned, {
    KEYWARD_METRICS_TOKEN: TOKEN,
    KEYWARD_REDIS_URL: process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379",
    KEYWARD_SAMPLE_INTERVAL_SECONDS: "0",
  }));
  source = await makeSource();
  claimsKey = (await makeApiKey(["claims:write"])).key;

  // A Prometheus of this test's own: scrape every second, evaluate the rules every second.
  dataDir = mkdtempSync(path.join(os.tmpdir(), "keyward-prometheus-"));
  const port = await reservePort();
  promUrl = `http://127.0.0.1:${port}`;
  const config = {
    global: { scrape_interval: "1s", evaluation_interval: "1s" },
    rule_files: [path.join(ROOT, "deploy/prometheus/keyward-rules.yml")],
    scrape_configs: [
      {
        job_name: "keyward",
        metrics_path: "/metrics",
        authorization: { type: "Bearer", credentials: TOKEN },
        static_configs: [{ targets: [new URL(baseUrl).host] }],
      },
    ],
  };
  writeFileSync(path.join(dataDir, "prometheus.yml"), JSON.stringify(config));
  prometheus = spawn(
    "prometheus",
    [
      `--config.file=${path.join(dataDir, "prometheus.yml")}`,
      `--storage.tsdb.path=${path.join(dataDir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  prometheus.stdout!.on("data", (d: Buffer) => (promOutput += d.toString()));
  prometheus.stderr!.on("data", (d: Buffer) => (promOutput += d.toString()));
  await vi.waitFor(
    async () => {
      if (prometheus!.exitCode !== null) throw new Error(`prometheus exited (${prometheus!.exitCode}):\n${promOutput}`);
      expect((await fetch(`${promUrl}/-/ready`)).status).toBe(200);
    },
    { timeout: 30_000, interval: 200 },
  );
}, 120_000);

afterAll(async () => {
  traffic.stop = true;
  await traffic.done;
  if (prometheus && prometheus.exitCode === null) {
    prometheus.kill("SIGTERM");
    await new Promise((r) => prometheus!.once("exit", r));
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  for (const s of spawned) await stopServer(s);
});

const claim = (eventId: string) => call(baseUrl, "POST", "/api/v1/claims", { key: claimsKey, body: { source, eventId, eventType: "t" } });

/** When Prometheus last scraped the server (epoch seconds; 0 before its first scrape). */
async function lastScrape(): Promise<number> {
  return Number((await promQuery('timestamp(up{job="keyward"})')).data?.result[0]?.value[1] ?? 0);
}

/**
 * Claims in a loop until told to stop: each round 5 first claims, each claimed again 4 times (Redis answers
 * those), and a batch. A round ends no sooner than Prometheus' next scrape, so every scrape finds new
 * claims (what the rates draw) and the loop leaves the machine's two cores to the server and Prometheus.
 */
function keepClaiming(): void {
  traffic = { stop: false };
  traffic.done = (async () => {
    while (!traffic.stop) {
      const scraped = await lastScrape();
      const ids = Array.from({ length: 5 }, () => uniq("evt"));
      await Promise.all(ids.map(claim));
      for (let i = 0; i < 4; i++) await Promise.all(ids.map(claim));
      await call(baseUrl, "POST", "/api/v1/claims/batch", { key: claimsKey, body: { source, events: [{ eventId: uniq("b"), eventType: "t" }] } });
      await vi.waitFor(
        async () => {
          if (!traffic.stop) expect(await lastScrape()).toBeGreaterThan(scraped);
        },
        { timeout: 30_000, interval: 100 },
      );
    }
  })();
}

describe("deploy/grafana/keyward.json and the recording rules in a real Prometheus", () => {
  it("Prometheus scrapes the server and loads the rules", async () => {
    await vi.waitFor(
      async () => {
        const up = await promQuery('up{job="keyward"}');
        expect(up.data?.result.map((r) => r.value[1])).toEqual(["1"]);
      },
      { timeout: 30_000, interval: 500 },
    );
    const res = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as { data: { groups: { name: string; rules: unknown[] }[] } };
    expect(res.data.groups.map((g) => g.name).sort()).toEqual(["keyward"]);
  });

  it("every panel query and every recording rule parses and returns series, with traffic", async () => {
    // What the panels draw: claims (claimed, duplicates answered by Redis, a batch, one refused) …
    expect((await call(baseUrl, "POST", "/api/v1/claims", { key: claimsKey, body: { source, eventId: "", eventType: "t" } })).status).toBe(422);
    for (const id of ["gone", "alive"]) expect((await claim(id)).status).toBe(201);
    keepClaiming();
    // … dead letters (one processed event whose key is gone, one whose key expires within the day) …
    await setKeyExpiry(source, "gone", -60);
    await setKeyExpiry(source, "alive", 3600);
    await seedDeadLetters(source, ["gone", "alive"]);
    // … a prune by the server (expired keys), a late duplicate, an inlet's lag, and a sample of it all.
    await insertKeys(source, 25, "now() - interval '1 hour' + i * interval '1 ms'", "old-");
    const operatorKey = (await makeApiKey(["operator"])).key;
    const prune = await call(baseUrl, "POST", "/api/v1/maintenance/prune", { key: operatorKey, body: {} });
    expect(prune.status, prune.text).toBe(200);
    await sql(
      `INSERT INTO late_duplicates (source, event_id, first_claim_at, late_claim_at, gap_seconds, key_state)
       VALUES ($1, 'late', now() - interval '8 days', now() - interval '1 minute', 8 * 86400 - 60, 'pruned')`,
      [source],
    );
    const inlet = await createInlet(source, parseInput(createInletRequest, { amqpUrl: "amqp://guest:guest@127.0.0.1:5672/", queue: uniq("q"), check: false }), cliPrincipal());
    await reportInlet(inlet.id, { state: "consuming", lagMessages: 3, consumed: 1, lastMessageAt: new Date(), lastMessageAgeSeconds: 0.4 });
    expect((await takeSample()).outcome).not.toBe("locked");
    // Redis answers duplicates once the source's claims are mostly duplicates (lib/claims/redis.ts).
    await vi.waitFor(async () => expect(await scrapeText()).toMatch(/^keyward_redis_lookups_total\{result="hit"\} [1-9]/m), { timeout: 30_000, interval: 250 });

    const queries = [...panelQueries(), ...rules.map((r) => ({ panel: `recording rule ${r}`, expr: r }))];
    expect(queries.length).toBeGreaterThanOrEqual(40);
    let missing: string[] = [];
    await vi.waitFor(
      async () => {
        missing = [];
        for (const q of queries) {
          const a = await promQuery(q.expr);
          if (a.status !== "success") throw new Error(`${q.panel}: ${q.expr} is refused by Prometheus: ${a.error}`);
          if (!a.data!.result.length) missing.push(`${q.panel}: ${q.expr}`);
        }
        expect(missing).toEqual([]);
      },
      { timeout: 60_000, interval: 1000 },
    );

    // The figures are the traffic's, not just present.
    const value = async (expr: string) => Number((await promQuery(expr)).data!.result[0].value[1]);
    expect(await value(`sum(keyward:claims:rate5m{source="${source}",outcome="duplicate"})`)).toBeGreaterThan(0);
    expect(await value(`keyward:dead_letter_keys_at_risk:max{source="${source}",risk="expired"}`)).toBe(1);
    expect(await value(`keyward:dead_letter_keys_at_risk:max{source="${source}",risk="expiring"}`)).toBe(1);
    expect(await value(`keyward:dead_letters_pending:max{source="${source}"}`)).toBe(2);
    expect(await value("keyward:redis_hit_ratio:rate5m")).toBeGreaterThan(0);
    expect(await value('keyward:claim_duration_seconds:p99_5m{route="claim"}')).toBeGreaterThan(0);
    expect(await value("max(keyward_prune_last_success_timestamp_seconds)")).toBeGreaterThan(0);
    // No replay runs: every health of the source reads 0 (the alerts' series exist before the first replay).
    for (const health of ["ok", "failing", "stalled"]) expect(await value(`keyward:replays_running:max{source="${source}",health="${health}"}`)).toBe(0);
  }, 150_000);

  it("the source variable's label_values query finds the source", async () => {
    const variable = dashboard.templating.list.find((v) => v.name === "source")!;
    const m = /^label_values\((\w+), (\w+)\)$/.exec(variable.definition!);
    expect(m).not.toBeNull();
    const res = (await (await fetch(`${promUrl}/api/v1/label/${m![2]}/values?${new URLSearchParams({ "match[]": m![1] })}`)).json()) as { data: string[] };
    expect(res.data).toContain(source);
  });

  it("the rule groups evaluate without errors", async () => {
    const res = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] } };
    const unhealthy = res.data.groups.flatMap((g) => g.rules).filter((r) => r.health !== "ok");
    expect(unhealthy.map((r) => `${r.name}: ${r.health} ${r.lastError ?? ""}`)).toEqual([]);
  });
});
