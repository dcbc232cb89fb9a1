/**
 * Readiness (GET /readyz): may a load balancer send this instance traffic? Three checks, in one pass:
 * - the database answers a query within KEYWARD_READYZ_TIMEOUT_MS (down, black-holed, or every pooled
 *   connection busy for that long: not ready);
 * - every migration this build ships is applied (`_prisma_migrations`, read by that same query; a database
 *   a newer build has migrated further is fine, the extra names are listed as `unknown`);
 * - no job this process runs is wedged (lib/jobs/registry.ts: a pass running, or overdue, longer than its
 *   bound). A job whose passes fail (a pruning error) is listed with its error but does not make the
 *   instance unready: it still serves claims, and taking it out of rotation would not fix the job.
 *
 * Cheap by construction: one round trip that reads a few catalog-sized rows, and probes never pile up on
 * the database: while a check's query is outstanding (a black-holed network holds it up to the pool's
 * connect timeout), every probe joins it instead of starting another, each waiting at most the timeout.
 */
import "server-only";
import { z } from "zod";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { loadEnv } from "@/lib/config/env";
import { query } from "@/lib/db/sql";
import { jobStatuses, wedgedReason, type JobStatus } from "@/lib/jobs/registry";
import { processGlobal } from "@/lib/process-global";
import type { JobHealth, Readiness } from "./schema";

type Shipped = { names: string[] | undefined };
const shipped = processGlobal("migrationsShipped", (): Shipped => ({ names: undefined }));

/** The migration folders of `dir` (prisma/migrations), sorted: what this build expects applied. */
export function migrationNames(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(path.join(dir, e.name, "migration.sql")))
    .map((e) => e.name)
    .sort();
}

/**
 * Tells readiness where this build's migrations are (`keyward start` calls it with prisma/migrations: the
 * process that knows the repository's root; Next's bundled copy of this module reads the same list).
 */
export function shipMigrations(dir: string): void {
  shipped.names = migrationNames(dir);
}

function shippedMigrations(): string[] {
  return (shipped.names ??= migrationNames(path.join(process.cwd(), "prisma", "migrations")));
}

type DbAnswer = { applied: string[] } | { error: string };

const inFlight = processGlobal("readinessCheck", () => ({ current: undefined as Promise<DbAnswer> | undefined }));

/** The applied migrations, or why the database did not answer; one such query at a time per process. */
function askDatabase(): Promise<DbAnswer> {
  inFlight.current ??= query(
    z.object({ applied: z.array(z.string()) }),
    `SELECT coalesce(array_agg(migration_name::text ORDER BY migration_name), '{}') AS applied
     FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  )
    .then(([row]): DbAnswer => ({ applied: row.applied }))
    .catch((err: unknown): DbAnswer => ({ error: err instanceof Error ? err.message : String(err) }))
    .finally(() => (inFlight.current = undefined));
  return inFlight.current;
}

export type ReadinessOptions = {
  /** How long the database may take (default KEYWARD_READYZ_TIMEOUT_MS). */
  timeoutMs?: number;
  /** The migrations expected applied (default: this build's). */
  expected?: readonly string[];
  /** The jobs to judge (default: every running registry's, jobStatuses()). */
  jobs?: readonly JobStatus[];
  now?: number;
};

/** Runs the three checks. Never throws: a failing check is a reason. */
export async function checkReadiness(options: ReadinessOptions = {}): Promise<Readiness> {
  const timeoutMs = options.timeoutMs ?? loadEnv().KEYWARD_READYZ_TIMEOUT_MS;
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const answer = await Promise.race([
    askDatabase(),
    new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs))),
  ]).finally(() => clearTimeout(timer));
  const ms = Math.round(performance.now() - started);
  return judgeReadiness({
    database: answer === "timeout" ? { timeoutMs } : answer,
    ms,
    expected: options.expected ?? shippedMigrations(),
    jobs: options.jobs ?? jobStatuses(),
    now: options.now ?? Date.now(),
  });
}

export type ReadinessFacts = {
  database: { applied: string[] } | { error: string } | { timeoutMs: number };
  ms: number;
  expected: readonly string[];
  jobs: readonly JobStatus[];
  now: number;
};

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The verdict from what was observed. Pure. */
export function judgeReadiness(f: ReadinessFacts): Readiness {
  const reasons: string[] = [];
  let databaseReason: string | null = null;
  if ("timeoutMs" in f.database) databaseReason = `the database did not answer within ${f.database.timeoutMs} ms`;
  else if ("error" in f.database) databaseReason = `the database query failed: ${safeMessage(f.database.error)}`;
  if (databaseReason) reasons.push(databaseReason);

  let missing: string[] = [];
  let unknown: string[] = [];
  let migrationsReason: string | null = null;
  if ("applied" in f.database) {
    const applied = new Set(f.database.applied);
    const expected = new Set(f.expected);
    missing = f.expected.filter((m) => !applied.has(m));
    unknown = f.database.applied.filter((m) => !expected.has(m));
    if (missing.length) {
      migrationsReason = `${missing.length} migration(s) of this build not applied: ${missing.join(", ")} (run \`keyward migrate\`)`;
      reasons.push(migrationsReason);
    }
  } else {
    migrationsReason = "not checked: the database did not answer";
  }

  const jobs: JobHealth[] = f.jobs.map((j) => ({
    name: j.name,
    everyMs: j.everyMs,
    runningSince: iso(j.runningSince),
    lastSucceededAt: iso(j.lastSucceededAt),
    lastFailedAt: iso(j.lastFailedAt),
    lastError: j.lastError,
    wedged: wedgedReason(j, f.now),
  }));
  const wedged = jobs.filter((j) => j.wedged).map((j) => j.wedged!);
  const jobsReason = wedged.length ? `wedged job(s): ${wedged.join("; ")}` : null;
  if (jobsReason) reasons.push(jobsReason);

  return {
    status: reasons.length ? "not_ready" : "ready",
    reasons,
    checks: {
      database: { ok: databaseReason === null, reason: databaseReason, ms: f.ms },
      migrations: { ok: "applied" in f.database && missing.length === 0, reason: migrationsReason, missing, unknown },
      jobs: { ok: wedged.length === 0, reason: jobsReason, jobs },
    },
  };
}

/** A driver's message without what may name the host or the URL (probes are public). */
function safeMessage(message: string): string {
  return message.replace(/postgres(ql)?:\/\/\S+/g, "<database url>").replace(/\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b/g, "<address>").slice(0, 200);
}
