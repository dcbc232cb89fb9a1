/**
 * The health probes (lib/health): GET /healthz answers while the process serves, whatever the database;
 * GET /readyz answers 200 only while the database answers in time, this build's migrations are applied and
 * no job is wedged, and 503 not_ready with the reasons otherwise. Against the real `keyward start` talking
 * to PostgreSQL through a TCP proxy (test/setup/tcp-proxy.ts): up, down (refused) and black-holed; the
 * migration and job checks in-process, where the test can hand them a missing migration and a stuck job.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { checkReadiness, judgeReadiness, migrationNames } from "@/lib/health/readiness";
import { readinessSchema } from "@/lib/health/schema";
import { MIGRATIONS_DIR } from "@/lib/db/migrate";
import { startJobs, wedgedReason, type JobStatus } from "@/lib/jobs/registry";
import { call, startTestServer, type HttpResult } from "@/test/setup/auth";
import { stopServer, type Server } from "@/test/setup/server";
import { startTcpProxy, type TcpProxy } from "@/test/setup/tcp-proxy";

const READYZ_TIMEOUT_MS = 600;
const spawned: Server[] = [];
let proxy: TcpProxy;
let baseUrl: string;

beforeAll(async () => {
  const target = new URL(process.env.DATABASE_URL!);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  ({ baseUrl } = await startTestServer(spawned, {
    DATABASE_URL: proxy.url(process.env.DATABASE_URL!),
    KEYWARD_DB_CONNECT_TIMEOUT_MS: "1000",
    KEYWARD_DB_STATEMENT_TIMEOUT_MS: "1000",
    KEYWARD_READYZ_TIMEOUT_MS: String(READYZ_TIMEOUT_MS),
    KEYWARD_SAMPLE_INTERVAL_SECONDS: "0",
  }));
}, 120_000);

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
  await proxy?.close();
});

async function probe(path: "/healthz" | "/readyz"): Promise<HttpResult & { ms: number }> {
  const started = performance.now();
  const res = await call(baseUrl, "GET", path);
  return { ...res, ms: performance.now() - started };
}

function expectNotReady(res: HttpResult, reason: RegExp) {
  expect(res.status, res.text).toBe(503);
  expect(res.headers.get("cache-control")).toBe("no-store");
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(res.body.error.code).toBe("not_ready");
  expect(res.body.error.message).toMatch(reason);
  const details = readinessSchema.parse(res.body.error.details);
  expect(details.status).toBe("not_ready");
  expect(details.reasons.join("; ")).toMatch(reason);
  expect(res.text).not.toMatch(/postgres(ql)?:\/\/|127\.0\.0\.1/);
  return details;
}

describe("against the real server, through a TCP proxy to the database", () => {
  it("database up: /healthz 200 ok and /readyz 200 ready, both no-store, with every check passed", async () => {
    const live = await probe("/healthz");
    expect(live.status).toBe(200);
    expect(live.headers.get("cache-control")).toBe("no-store");
    expect(live.body).toMatchObject({ status: "ok" });
    const ready = await probe("/readyz");
    expect(ready.status, ready.text).toBe(200);
    expect(ready.headers.get("cache-control")).toBe("no-store");
    const body = readinessSchema.parse(ready.body);
    expect(body).toMatchObject({ status: "ready", reasons: [] });
    expect(body.checks.database.ok).toBe(true);
    expect(body.checks.migrations).toMatchObject({ ok: true, missing: [] });
    // The server's own jobs are listed (the tests turn most of them off; the audit partitions' upkeep runs).
    expect(body.checks.jobs.ok).toBe(true);
    expect(body.checks.jobs.jobs.map((j) => j.name)).toContain("audit partition upkeep");
  });

  it("database down (refused): /healthz still 200, /readyz 503 not_ready naming the database, at once; ready again once it is back", async () => {
    proxy.setMode("refuse");
    try {
      expect((await probe("/healthz")).status).toBe(200);
      const res = await probe("/readyz");
      const details = expectNotReady(res, /database/);
      expect(details.checks.database.ok).toBe(false);
      expect(details.checks.migrations.ok).toBe(false);
      expect(res.ms).toBeLessThan(READYZ_TIMEOUT_MS + 1500);
    } finally {
      proxy.setMode("forward");
    }
    await vi.waitFor(async () => expect((await probe("/readyz")).status).toBe(200), { timeout: 10_000, interval: 100 });
  });

  it("database black-holed: /readyz answers 503 within its timeout, probes share one check (no pile-up), and recovers after healing", async () => {
    proxy.setMode("blackhole");
    try {
      const before = proxy.connections();
      const answers = await Promise.all(Array.from({ length: 12 }, () => probe("/readyz")));
      for (const a of answers) {
        expectNotReady(a, /did not answer within 600 ms/);
        expect(a.ms).toBeLessThan(READYZ_TIMEOUT_MS + 1000);
      }
      // Twelve probes at once joined one outstanding check: one new connection attempt for all of them (a
      // second may come from the server's own jobs, which reach the database through the same proxy), never twelve.
      expect(proxy.connections() - before).toBeLessThanOrEqual(2);
      const live = await probe("/healthz");
      expect([live.status, live.body.status]).toEqual([200, "ok"]);
      expect(live.ms).toBeLessThan(1000);
    } finally {
      proxy.setMode("forward");
    }
    await vi.waitFor(async () => expect((await probe("/readyz")).status).toBe(200), { timeout: 10_000, interval: 200 });
  }, 30_000);
});

describe("in-process checks", () => {
  it("a migration of this build not applied makes the instance not ready, naming it; a database ahead of the build does not", async () => {
    const shipped = migrationNames(MIGRATIONS_DIR);
    expect(shipped.length).toBeGreaterThan(10);
    const behind = await checkReadiness({ expected: [...shipped, "29991231000000_from_the_future"], jobs: [], timeoutMs: 5000 });
    expect(behind.status).toBe("not_ready");
    expect(behind.checks.migrations).toMatchObject({ ok: false, missing: ["29991231000000_from_the_future"] });
    expect(behind.reasons.join()).toMatch(/29991231000000_from_the_future.*keyward migrate/);
    const ahead = await checkReadiness({ expected: shipped.slice(0, -1), jobs: [], timeoutMs: 5000 });
    expect(ahead.status).toBe("ready");
    expect(ahead.checks.migrations).toMatchObject({ ok: true, missing: [], unknown: [shipped.at(-1)] });
  });

  it("a job stuck in a pass past its bound makes the instance not ready; a job whose passes fail does not", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const jobs = startJobs(
      [
        { name: "stuck job", everyMs: 5, wedgedAfterMs: 100, run: () => gate },
        { name: "failing job", everyMs: 5, wedgedAfterMs: 100, run: async () => { throw new Error("boom"); } },
      ],
      () => {},
    );
    try {
      await vi.waitFor(
        async () => {
          const r = await checkReadiness({ expected: [], timeoutMs: 5000 });
          expect(r.status).toBe("not_ready");
          expect(r.reasons).toEqual([expect.stringMatching(/^wedged job\(s\): stuck job: a pass has been running for \d+ ms \(wedged after 100 ms\)$/)]);
          const failing = r.checks.jobs.jobs.find((j) => j.name === "failing job")!;
          expect(failing).toMatchObject({ wedged: null, lastError: "boom" });
          expect(failing.lastFailedAt).not.toBeNull();
        },
        { timeout: 5000, interval: 50 },
      );
      release();
      await vi.waitFor(async () => expect((await checkReadiness({ expected: [], timeoutMs: 5000 })).status).toBe("ready"), { timeout: 5000, interval: 20 });
    } finally {
      release();
      await jobs.stop();
    }
    // A stopped registry is no longer listed.
    expect((await checkReadiness({ expected: [], timeoutMs: 5000 })).checks.jobs.jobs.map((j) => j.name)).not.toContain("stuck job");
  });

  it("judges an overdue pass (a timer that never fired) as wedged, a pass within its bound as not (pure)", () => {
    const base: JobStatus = {
      name: "sampler", everyMs: 60_000, wedgedAfterMs: 600_000, runningSince: null, nextDueAt: 1_000_000,
      lastStartedAt: null, lastSucceededAt: null, lastFailedAt: null, lastError: null,
    };
    expect(wedgedReason(base, 1_000_000 + 600_000)).toBeNull();
    expect(wedgedReason(base, 1_000_000 + 600_001)).toBe("sampler: its next pass is 600 s overdue (wedged after 600 s)");
    expect(wedgedReason({ ...base, nextDueAt: null, runningSince: 0 }, 599_999)).toBeNull();
    const verdict = judgeReadiness({ database: { error: "connect ECONNREFUSED 10.1.2.3:5432 (postgresql://u:p@db/x)" }, ms: 3, expected: [], jobs: [], now: 0 });
    expect(verdict.reasons).toEqual(["the database query failed: connect ECONNREFUSED <address> (<database url>"]);
  });
});
