/**
 * `keyward start`: build if needed, open the database (DATABASE_URL or the embedded one), apply
 * migrations and the schema's upkeep (lib/db/prepare.ts, shared with the CLI; a failure stops start-up),
 * then serve the console and API with Next in this process (the claim endpoints through the fast path in
 * fast-routes.ts, everything else through Next).
 */
import "server-only";
import { z } from "zod";
import http from "node:http";
import { randomBytes } from "node:crypto";
import next from "next";
import { loadEnv, type KeywardEnv } from "@/lib/config/env";
import { prepareDatabase } from "@/lib/db/prepare";
import type { DatabaseHandle } from "@/lib/db/embedded";
import { closeDb } from "@/lib/db/client";
import { startApiKeyListener } from "@/lib/auth/api-key-cache";
import { redisJobs, registerRedisUse, startRedis, stopRedis } from "@/lib/claims/redis";
import { execute, query } from "@/lib/db/sql";
import { claimCountsJob, flushClaimCounts } from "@/lib/metrics/claim-counts";
import { metricsSamplerJob } from "@/lib/metrics/sampler";
import { startJobs } from "@/lib/jobs/registry";
import { buildIfNeeded, ensureGeneratedClient, ROOT } from "./build";
import { matchFastRoute, serveFast } from "./fast-routes";
import { auditPartitionsJob } from "@/lib/audit/partitions";
import { pruningJob } from "@/lib/retention/schedule";
import { scheduleReplayWorker } from "@/lib/replay/executor";
import { inletConsumerJobs } from "@/lib/inlets/consumers";
import { demoTrafficJob } from "@/lib/demo/traffic";
import { lateDuplicatesJob } from "@/lib/retention/late-duplicates";
import { notificationsJob } from "@/lib/notify/evaluate";
import { pageHeaders } from "@/lib/http/headers";
import { PAGE_PATH_HEADER } from "@/lib/auth/return-to";
import { KeywardError } from "@/lib/errors";
import { apiPathProblem, completeBodilessRefusals, isApiPath, malformedSegment, writeApiError } from "./api-edge";
import { MIGRATIONS_DIR } from "@/lib/db/migrate";
import { shipMigrations } from "@/lib/health/readiness";

export async function startServer(options: { build?: boolean } = {}): Promise<void> {
  const env = loadEnv();
  ensureGeneratedClient();
  if (options.build !== false) buildIfNeeded();

  let database: DatabaseHandle;
  let opened = false;
  try {
    database = await prepareDatabase({
      checkSession: true,
      upkeep: true,
      report: (s) => {
        if (s.step === "opened") {
          opened = true;
          console.log(`[keyward] database: ${s.database.description}`);
          if (s.target.url !== s.database.url) console.log(`[keyward] migrations: ${s.target.description}`);
        } else if (s.step === "migrated") {
          console.log(s.applied.length ? `[keyward] applied migrations: ${s.applied.join(", ")}` : "[keyward] database schema is up to date");
        } else if (s.step === "session_checked") {
          for (const warning of s.warnings) console.warn(`[keyward] warning: ${warning}`);
        } else if (s.step === "dedup_mode") {
          if (s.message) console.log(`[keyward] ${s.message}`);
        } else if (s.step === "audit_months_dropped") {
          if (s.months.length) console.log(`[keyward] dropped audit months past retention: ${s.months.join(", ")}`);
        }
      },
    });
  } catch (err) {
    if (!opened) throw err; // a configuration the database cannot be opened with: the CLI reports it
    console.error(`[keyward] cannot start: ${(err as Error).message}`);
    process.exit(1);
  }

  // Whatever fails once the database is open (no build to serve, the port taken, Redis refused) ends the process:
  // the open pool, listener and timers would otherwise keep a server that serves nothing alive.
  try {
    await serve(env, database);
  } catch (err) {
    console.error(`[keyward] cannot start: ${(err as Error).message}`);
    await closeDb().catch(() => {});
    await database.close().catch(() => {});
    process.exit(1);
  }
}

async function serve(env: KeywardEnv, database: DatabaseHandle): Promise<void> {
  shipMigrations(MIGRATIONS_DIR); // what GET /readyz expects applied
  const app = next({ dev: false, dir: ROOT, hostname: env.HOSTNAME, port: env.PORT });
  await app.prepare();
  const handle = app.getRequestHandler();
  const server = http.createServer(httpServerOptions(env), (req, res) => {
    req.headers[CLIENT_IP_HEADER] = clientIp(req, env.KEYWARD_TRUST_PROXY);
    const api = isApiPath(req.url);
    if (api) {
      const problem = apiPathProblem(req.url!);
      if (problem) return writeApiError(res, problem);
    }
    const fast = matchFastRoute(req.method, req.url);
    if (!fast) {
      if (!api) {
        // Console pages: a fresh nonce per response. Next reads it from the request's CSP header and puts
        // it on every script it renders; the browser runs no other inline script.
        const headers = pageHeaders(randomBytes(16).toString("base64"));
        // The page's own address, for a return after sign-in (lib/auth/return-to.ts); never the client's word.
        req.headers[PAGE_PATH_HEADER] = req.url ?? "/";
        req.headers["content-security-policy"] = headers[0][1];
        for (const [name, value] of headers) res.setHeader(name, value);
        if (malformedSegment(req.url ?? "/")) {
          // Next would fail decoding a dynamic segment (/events/%ZZ/x) with a bare 500.
          res.writeHead(400, { "content-type": "text/plain; charset=utf-8" });
          return void res.end("Bad request: the path is not valid percent-encoded UTF-8.\n");
        }
      } else {
        delete req.headers["content-security-policy"];
        completeBodilessRefusals(req, res);
      }
      return void handle(req, res);
    }
    serveFast(fast, req, res).catch((err) => {
      console.error("[keyward] fast route failed:", err);
      if (!res.headersSent) writeApiError(res, new KeywardError(500, "internal_error", "internal error; see the server log"));
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err) => reject(new Error(`cannot listen on ${env.HOSTNAME}:${env.PORT}: ${err.message}`)));
    server.listen(env.PORT, env.HOSTNAME, resolve);
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : env.PORT;
  // PORT=0 lets the kernel choose; what builds this server's own URL later (sign-on redirects, links in
  // notifications) reads PORT, so it says the port actually bound.
  if (env.PORT === 0) process.env.PORT = String(port);
  console.log(`[keyward] console and API on http://${env.HOSTNAME}:${port}`);
  const log = (msg: string) => console.error(`[keyward] ${msg}`);
  // The database listener (the API-key cache's evictions, the Redis namespace) needs a direct connection:
  // KEYWARD_MIGRATE_DATABASE_URL when set (behind PgBouncer in transaction mode LISTEN needs one), else
  // the database's own URL.
  const redisUrl = env.KEYWARD_REDIS_URL;
  if (redisUrl) {
    await registerRedisUse();
    await startRedis({
      url: redisUrl,
      timeoutMs: env.KEYWARD_REDIS_TIMEOUT_MS,
      statementTimeoutMs: env.KEYWARD_DB_STATEMENT_TIMEOUT_MS,
      connectTimeoutMs: env.KEYWARD_DB_CONNECT_TIMEOUT_MS,
      log: (msg) => console.warn(`[keyward] ${msg}`),
    });
    console.log(`[keyward] Redis first line: on (command timeout ${env.KEYWARD_REDIS_TIMEOUT_MS} ms)`);
  }
  const listener =
    env.KEYWARD_API_KEY_CACHE === "on" || redisUrl
      ? startApiKeyListener({
          url: env.KEYWARD_MIGRATE_DATABASE_URL ?? database.url,
          crossSession: (sql, values) => execute(sql, values),
          log: (msg) => console.warn(`[keyward] ${msg}`),
          connectTimeoutMs: env.KEYWARD_DB_CONNECT_TIMEOUT_MS,
          cacheKeys: env.KEYWARD_API_KEY_CACHE === "on",
        })
      : undefined;
  // Every periodic job of the process (lib/jobs/registry.ts; docs/architecture.md lists them). The replay
  // worker polls through a registry of its own (its stop also ends the deliveries it drives).
  const jobs = startJobs(
    [
      auditPartitionsJob(),
      metricsSamplerJob(),
      pruningJob(log),
      lateDuplicatesJob(),
      notificationsJob(),
      claimCountsJob(),
      ...(redisUrl ? redisJobs() : []),
      // The inlet supervisor: its stop also stops each consumer, which stores and acknowledges the batch in hand.
      ...inletConsumerJobs(log),
      // `keyward demo`: its simulated senders keep delivering while it runs (lib/demo/traffic.ts).
      ...(process.env.KEYWARD_DEMO === "1" ? [demoTrafficJob()] : []),
    ],
    log,
  );
  const stopReplays = scheduleReplayWorker(log);
  await printFirstStartHints();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`[keyward] ${signal}: shutting down`);
    // A prune run in progress ends after its current batch, a sample commits or rolls back; the inlet
    // consumers store and acknowledge the batch in hand and the rest goes back to the queues.
    const jobsStopped = jobs.stop();
    // Deliveries in flight are aborted and their items put back (a restart resumes them).
    const replaysStopped = stopReplays();
    // Let requests in flight finish (a committed claim must get its answer), then cut what is left.
    const closed = new Promise((r) => server.close(r));
    server.closeIdleConnections();
    const drained = await Promise.race([closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 10_000))]);
    if (!drained) server.closeAllConnections();
    await jobsStopped; // before the pool closes
    await replaysStopped;
    await flushClaimCounts().catch(() => {});
    await stopRedis();
    await listener?.stop();
    await closeDb();
    await database.close();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

/**
 * Bounds on slow clients (a body trickled in for minutes, headers sent byte by byte): a request whose
 * headers, or whole self, take longer gets a 408 and its connection closed; an idle keep-alive connection
 * is closed. Node enforces the first two on a sweep every `connectionsCheckingInterval`, so that sweep runs
 * often enough for a close to come at most a second (or half the header timeout) after the bound.
 */
export function httpServerOptions(env: Pick<KeywardEnv, "KEYWARD_HTTP_HEADERS_TIMEOUT_MS" | "KEYWARD_HTTP_REQUEST_TIMEOUT_MS" | "KEYWARD_HTTP_KEEP_ALIVE_TIMEOUT_MS">): http.ServerOptions {
  return {
    headersTimeout: env.KEYWARD_HTTP_HEADERS_TIMEOUT_MS,
    requestTimeout: env.KEYWARD_HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: env.KEYWARD_HTTP_KEEP_ALIVE_TIMEOUT_MS,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(env.KEYWARD_HTTP_HEADERS_TIMEOUT_MS / 2))),
  };
}

const CLIENT_IP_HEADER = "x-keyward-client-ip";

/**
 * The caller's address, for sign-in throttling and the action log: the socket's peer, or with
 * KEYWARD_TRUST_PROXY the last address your proxy appended to X-Forwarded-For. Always replaces whatever
 * the client sent in x-keyward-client-ip.
 */
function clientIp(req: http.IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = String(req.headers["x-forwarded-for"] ?? "").split(",").map((s) => s.trim()).filter(Boolean);
    if (forwarded.length) return forwarded[forwarded.length - 1];
  }
  return req.socket.remoteAddress ?? "unknown";
}

async function printFirstStartHints(): Promise<void> {
  const [counts] = await query(
    z.object({ sources: z.number(), keys: z.number(), admins: z.number() }),
    `SELECT (SELECT count(*) FROM sources) AS sources, (SELECT count(*) FROM api_keys WHERE revoked_at IS NULL) AS keys,
            (SELECT count(*) FROM auth_users WHERE role = 'admin' AND NOT disabled) AS admins`,
  );
  if (counts.admins === 0) {
    console.log(
      "[keyward] no admin yet: the console shows only its sign-in page until one exists. Create the first admin\n" +
        "          (prompts for a password, or prints a generated one once):\n" +
        "          npx keyward user create <name> --role admin",
    );
  }
  if (counts.sources === 0) {
    console.log(
      "[keyward] no source yet. Create one with a deliberate TTL (retry window + queue lag + clock skew + replay):\n" +
        "          npx keyward source create stripe --retry-window 3d --queue-lag 1d --clock-skew 5m --replay 3d",
    );
  }
  if (counts.keys === 0) {
    console.log(
      "[keyward] no API key yet. Services claim with one:\n" +
        "          npx keyward apikey create --name my-service --scopes claims:write",
    );
  }
}
