/**
 * `keyward start`: build if needed, open the database (DATABASE_URL or the embedded one), apply
 * migrations (a failure stops start-up), then serve the console and API with Next in this process
 * (the claim endpoints through the fast path in fast-routes.ts, everything else through Next).
 */
import http from "node:http";
import { randomBytes } from "node:crypto";
import next from "next";
import { loadEnv, type KeywardEnv } from "../config/env";
import { migrationTarget, openDatabase } from "../db/open";
import { checkDatabaseSession } from "../db/session-check";
import { migrate } from "../db/migrate";
import { closeDb, pool } from "../db/client";
import { startApiKeyListener } from "../auth/api-key-cache";
import { registerRedisUse, startRedis, stopRedis } from "../claims/redis";
import { query } from "../db/sql";
import { flushClaimCounts } from "../metrics/claim-counts";
import { scheduleMetricsSampler } from "../metrics/sampler";
import { buildIfNeeded, ensureGeneratedClient, ROOT } from "./build";
import { matchFastRoute, serveFast } from "./fast-routes";
import { dropExpiredAuditPartitions, ensureAuditPartitions, scheduleAuditPartitions } from "../audit/partitions";
import { schedulePruning } from "../retention/schedule";
import { scheduleReplayWorker } from "../replay/executor";
import { applyDedupModeSetting } from "../retention/partitions";
import { pageHeaders } from "../http/headers";
import { KeywardError } from "../errors";
import { apiPathProblem, completeBodilessRefusals, isApiPath, malformedSegment, writeApiError } from "./api-edge";

export async function startServer(options: { build?: boolean } = {}): Promise<void> {
  const env = loadEnv();
  ensureGeneratedClient();
  if (options.build !== false) buildIfNeeded();

  const external = Boolean(env.DATABASE_URL); // the embedded database is one session: nothing to check there
  const database = await openDatabase();
  console.log(`[keyward] database: ${database.description}`);
  try {
    const target = migrationTarget(database);
    if (target.url !== database.url) console.log(`[keyward] migrations: ${target.description}`);
    const applied = await migrate(target.url);
    console.log(applied.length ? `[keyward] applied migrations: ${applied.join(", ")}` : "[keyward] database schema is up to date");
    const warnings = external ? await checkDatabaseSession({ migratedElsewhere: target.url !== database.url }) : [];
    for (const warning of warnings) console.warn(`[keyward] warning: ${warning}`);
    await ensureAuditPartitions();
    const dedup = await applyDedupModeSetting();
    if (dedup) console.log(`[keyward] ${dedup}`);
    const dropped = await dropExpiredAuditPartitions();
    if (dropped.length) console.log(`[keyward] dropped audit months past retention: ${dropped.join(", ")}`);
  } catch (err) {
    console.error(`[keyward] cannot start: ${(err as Error).message}`);
    await database.close();
    process.exit(1);
  }

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
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(env.PORT, env.HOSTNAME, resolve);
    });
  } catch (err) {
    console.error(`[keyward] cannot listen on ${env.HOSTNAME}:${env.PORT}: ${(err as Error).message}`);
    await closeDb();
    await database.close();
    process.exit(1);
  }
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : env.PORT;
  console.log(`[keyward] console and API on http://${env.HOSTNAME}:${port}`);
  // The database listener (the API-key cache's evictions, the Redis namespace) needs a direct connection:
  // KEYWARD_MIGRATE_DATABASE_URL when set (behind PgBouncer in transaction mode LISTEN needs one), else
  // DATABASE_URL. Neither runs on the embedded database (one shared session).
  const redisUrl = external ? env.KEYWARD_REDIS_URL : undefined;
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
    external && (env.KEYWARD_API_KEY_CACHE === "on" || redisUrl)
      ? startApiKeyListener({
          url: env.KEYWARD_MIGRATE_DATABASE_URL ?? database.url,
          crossSession: (sql, values) => pool().query(sql, values),
          log: (msg) => console.warn(`[keyward] ${msg}`),
          connectTimeoutMs: env.KEYWARD_DB_CONNECT_TIMEOUT_MS,
          cacheKeys: env.KEYWARD_API_KEY_CACHE === "on",
        })
      : undefined;
  const stopPartitions = scheduleAuditPartitions((msg) => console.error(`[keyward] ${msg}`));
  const stopSampler = scheduleMetricsSampler((msg) => console.error(`[keyward] ${msg}`));
  const stopPruning = schedulePruning((msg) => console.error(`[keyward] ${msg}`));
  const stopReplays = scheduleReplayWorker((msg) => console.error(`[keyward] ${msg}`));
  await printFirstStartHints();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`[keyward] ${signal}: shutting down`);
    stopPartitions();
    const samplerStopped = stopSampler();
    const pruningStopped = stopPruning();
    // Deliveries in flight are aborted and their items put back (a restart resumes them).
    const replaysStopped = stopReplays();
    // Let requests in flight finish (a committed claim must get its answer), then cut what is left.
    const closed = new Promise((r) => server.close(r));
    server.closeIdleConnections();
    const drained = await Promise.race([closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 10_000))]);
    if (!drained) server.closeAllConnections();
    await pruningStopped; // a run in progress ends after its current batch, before the pool closes
    await replaysStopped;
    await flushClaimCounts().catch(() => {});
    await stopRedis();
    await listener?.stop();
    await samplerStopped; // a sample in progress commits or rolls back before the pool closes
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
  const [counts] = await query<{ sources: number; keys: number; admins: number }>(
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
