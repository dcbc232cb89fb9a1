/**
 * The one configuration loader. Every setting comes from the environment, is validated once with zod,
 * and fails start-up with a message naming the variable.
 */
import "server-only";
import path from "node:path";
import { z } from "zod";

const intFrom = (def: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(def);

/** An optional setting: unset and empty both mean "not set". */
function optionalString<T extends z.ZodType<unknown, string>>(inner: T) {
  return z.union([z.literal("").transform(() => undefined), inner]).optional();
}

const envSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgresql:// URL")
    .optional()
    .or(z.literal("").transform(() => undefined)),
  // Where migrations are applied, when that is not DATABASE_URL: behind a transaction-pooling PgBouncer,
  // a direct URL of the same database (the migrator holds a session-level lock; docs/reliability.md).
  KEYWARD_MIGRATE_DATABASE_URL: optionalString(z.string().regex(/^postgres(ql)?:\/\//, "must be a postgresql:// URL")),
  // A read replica (a streaming standby of DATABASE_URL) for the console's read-only queries and audit
  // search (lib/db/read.ts; docs/scaling.md). Claims, replays and every write stay on DATABASE_URL.
  KEYWARD_READ_DATABASE_URL: optionalString(z.string().regex(/^postgres(ql)?:\/\//, "must be a postgresql:// URL")),
  // After the replica failed to answer, reads go to the primary for this long before the replica is tried again.
  KEYWARD_READ_RETRY_SECONDS: intFrom(30, 1, 3600),
  KEYWARD_DATA_DIR: z.string().min(1).default(".keyward"),
  KEYWARD_EMBEDDED_PORT: intFrom(0, 0, 65535),
  PORT: intFrom(3000, 0, 65535),
  HOSTNAME: z.string().min(1).default("localhost"),
  // Slow clients (lib/server/start.ts): the whole header block must arrive within HEADERS, the whole
  // request (headers and body) within REQUEST, or the server answers 408 and closes the connection; an
  // idle keep-alive connection is closed after KEEP_ALIVE. Responses (a long CSV export) are not bounded.
  KEYWARD_HTTP_HEADERS_TIMEOUT_MS: intFrom(10000, 100, 600000),
  KEYWARD_HTTP_REQUEST_TIMEOUT_MS: intFrom(30000, 100, 3600000),
  KEYWARD_HTTP_KEEP_ALIVE_TIMEOUT_MS: intFrom(5000, 100, 600000),
  KEYWARD_DB_POOL_MAX: intFrom(10, 1, 200),
  KEYWARD_DB_CONNECT_TIMEOUT_MS: intFrom(3000, 100, 60000),
  KEYWARD_DB_STATEMENT_TIMEOUT_MS: intFrom(5000, 100, 600000),
  // GET /readyz (lib/health/readiness.ts): the database must answer its check within this, or the instance
  // reports not ready. Keep a probe's own timeout above it.
  KEYWARD_READYZ_TIMEOUT_MS: intFrom(1000, 50, 60000),
  // Named (server-side) prepared statements for the hot statements (lib/db/sql.ts): parsed and planned once
  // per connection. Turn off behind a pooler that cannot keep them (PgBouncer < 1.21 in transaction mode,
  // or ≥ 1.21 without max_prepared_statements).
  KEYWARD_DB_PREPARED_STATEMENTS: z.enum(["on", "off"], { error: 'must be "on" or "off"' }).default("on"),
  // Idle connections are kept 5 minutes: a reopened connection costs ~12 ms plus a slow first claim.
  KEYWARD_DB_IDLE_TIMEOUT_MS: intFrom(300000, 0, 86400000),
  // The in-process API-key cache of `keyward start` (lib/auth/api-key-cache.ts): a revoked key is refused by
  // every server within 1 s. "off": every request reads its key from the database.
  KEYWARD_API_KEY_CACHE: z.enum(["on", "off"], { error: 'must be "on" or "off"' }).default("on"),
  // Redis as the claim path's first line (lib/claims/redis.ts): unset, not used. A command slower than the
  // timeout (ms) goes to PostgreSQL instead; so does everything while Redis is down.
  KEYWARD_REDIS_URL: optionalString(z.string().regex(/^rediss?(\+sentinel|\+cluster)?:\/\//, "must be a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL")),
  KEYWARD_REDIS_TIMEOUT_MS: intFrom(25, 1, 1000),
  // Saved results (README "Saved results"): the largest body `complete` may save with a key, in bytes (the
  // decoded body; status and headers are bounded by the schema). A larger one is refused with 422
  // result_too_large and nothing changes; keyward/client then completes without it.
  KEYWARD_RESULT_MAX_BYTES: intFrom(65536, 0, 262144),
  // Pruning expired dedup keys (lib/retention/prune.ts): rows per batch (one short transaction each),
  // pause between batches, time budget per run, and how often the server runs it (0: never).
  KEYWARD_PRUNE_BATCH_SIZE: intFrom(5000, 1, 100000),
  KEYWARD_PRUNE_PAUSE_MS: intFrom(50, 0, 60000),
  KEYWARD_PRUNE_BUDGET_MS: intFrom(30000, 1, 3600000),
  KEYWARD_PRUNE_INTERVAL_SECONDS: intFrom(60, 0, 86400),
  // Partition mode at setup (lib/retention/partitions.ts): "partition" makes `keyward migrate` and
  // `keyward start` switch a still EMPTY dedup table to daily partitions; a table holding keys is never
  // converted implicitly (that is `keyward partitions enable`). "single" (default) changes nothing.
  KEYWARD_DEDUP_MODE: z.enum(["single", "partition"]).default("single"),
  // Lets an external scheduler call POST /api/v1/maintenance/prune/external; unset, that route is a 404.
  KEYWARD_MAINTENANCE_SECRET: optionalString(z.string().min(32, "must be at least 32 characters")),
  // A bearer token Prometheus may scrape GET /metrics with (instead of an API key of scope metrics).
  KEYWARD_METRICS_TOKEN: optionalString(z.string().min(32, "must be at least 32 characters")),
  // The URL people reach the console at. An https:// URL makes the session cookie Secure.
  KEYWARD_PUBLIC_URL: optionalString(z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" }).transform((u) => u.replace(/\/+$/, ""))),
  // Signs session cookies; generated once and kept in the database when unset.
  KEYWARD_AUTH_SECRET: optionalString(z.string().min(32, "must be at least 32 characters")),
  // Take the client address from X-Forwarded-For (set by your reverse proxy) instead of the socket.
  KEYWARD_TRUST_PROXY: z.enum(["true", "false", "1", "0", ""]).default("false").transform((v) => v === "true" || v === "1"),
  // The metrics sampler (lib/metrics/sampler.ts): one sample of the dedup table every this many seconds,
  // in whole minutes (samples are keyed by minute); 0 turns it off.
  KEYWARD_SAMPLE_INTERVAL_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(3600)
    .refine((s) => s % 60 === 0, "must be 0 (off) or whole minutes: 60, 120, … 3600")
    .default(60),
  KEYWARD_OIDC_ISSUER: optionalString(z.url({ protocol: /^https?$/, error: "must be the issuer's http(s) URL" })),
  KEYWARD_OIDC_CLIENT_ID: optionalString(z.string()),
  KEYWARD_OIDC_CLIENT_SECRET: optionalString(z.string()),
  KEYWARD_OIDC_NAME: z.string().min(1).default("single sign-on"),
  KEYWARD_OIDC_ROLE_CLAIM: optionalString(z.string()),
  KEYWARD_OIDC_ADMINS: optionalString(z.string()),
  KEYWARD_OIDC_OPERATORS: optionalString(z.string()),
  KEYWARD_OIDC_VIEWERS: optionalString(z.string()),
  // How long the audit history is kept, in days (whole months are dropped past it). Never below 90, the
  // longest TTL a source may have.
  KEYWARD_AUDIT_RETENTION_DAYS: intFrom(400, 90, 36500),
  // The replay executor (lib/replay/executor.ts): whether this process runs it, how often it looks for
  // work, how long a worker's hold on a replay or item lasts without renewal (a dead server's items are
  // picked up again after it), and the timeout of one delivery.
  KEYWARD_REPLAY_WORKER: z.enum(["true", "false", "1", "0", ""]).default("1").transform((v) => v !== "false" && v !== "0"),
  KEYWARD_REPLAY_POLL_MS: intFrom(500, 50, 60000),
  KEYWARD_REPLAY_LEASE_SECONDS: intFrom(60, 2, 3600),
  KEYWARD_REPLAY_TIMEOUT_MS: intFrom(10000, 100, 120000),
  // The default retry schedule of a new replay (lib/replay/backoff.ts DEFAULT_SCHEDULE; a start request's
  // `retry` sets one replay's): attempts per item, the first wait's ceiling, the longest wait's ceiling.
  KEYWARD_REPLAY_RETRY_MAX_ATTEMPTS: intFrom(12, 1, 100),
  KEYWARD_REPLAY_RETRY_INITIAL_MS: intFrom(10_000, 1, 86_400_000),
  KEYWARD_REPLAY_RETRY_MAX_DELAY_MS: intFrom(3_600_000, 1, 86_400_000),
  // Inlets (lib/inlets: RabbitMQ, BullMQ, NATS): whether this process consumes them, and how often it re-reads the inlets
  // table (added / removed inlets) and reports each inlet's lag.
  KEYWARD_INLET_CONSUMER: z.enum(["on", "off"], { error: 'must be "on" or "off"' }).default("on"),
  KEYWARD_INLET_POLL_MS: intFrom(5000, 100, 600000),
  // After a signing-secret rotation, replays are signed with the old and the new secret for this long (0: none).
  KEYWARD_SIGNING_SECRET_GRACE_SECONDS: intFrom(86400, 0, 30 * 86400),
  // The late-duplicate job (lib/retention/late-duplicates.ts): how often it reads new claims in the audit
  // history for events processed twice (0: never, e.g. on instances that only serve claims).
  KEYWARD_LATE_DUPLICATES_INTERVAL_SECONDS: intFrom(60, 0, 3600),
  // The largest dead-letter payload stored, in bytes: a raw intake body (POST /api/v1/dead-letters/raw) and
  // an inlet's message (RabbitMQ, BullMQ, NATS). 25 MiB by default (GitHub sends up to 25 MB). The JSON
  // envelope (POST /api/v1/dead-letters) takes payloads up to 1 MiB, or this when lower.
  KEYWARD_MAX_PAYLOAD_BYTES: intFrom(25 * 1024 * 1024, 1024, 256 * 1024 * 1024),
  // Notifications (lib/notify): a webhook told when a replay fails or stalls, keys are at risk, late
  // duplicates appear or pruning fails, and again when each clears. Unset URL: off. `slack` posts
  // {"text": …} (Slack-compatible incoming webhooks); `standard` posts a JSON event signed per Standard
  // Webhooks with KEYWARD_NOTIFY_SECRET (whsec_…). Evaluated every INTERVAL on one instance; at most one
  // firing message per condition per THROTTLE (a condition still firing is reminded once per THROTTLE).
  KEYWARD_NOTIFY_URL: optionalString(z.url({ protocol: /^https?$/, error: "must be an http:// or https:// URL" })),
  KEYWARD_NOTIFY_FORMAT: optionalString(z.enum(["slack", "standard"], { error: 'must be "slack" or "standard"' })),
  KEYWARD_NOTIFY_SECRET: optionalString(z.string().regex(/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/, "must be a whsec_… secret (base64, at least 24 bytes)")),
  KEYWARD_NOTIFY_INTERVAL_SECONDS: intFrom(60, 0, 3600),
  KEYWARD_NOTIFY_THROTTLE_SECONDS: intFrom(3600, 0, 7 * 86400),
  // Settled (delivered) dead letters of a source without its own dead-letter retention are pruned after this.
  KEYWARD_DEAD_LETTER_RETENTION_DAYS: intFrom(30, 1, 3650),
}).superRefine((env, ctx) => {
  if (env.KEYWARD_NOTIFY_FORMAT === "standard" && !env.KEYWARD_NOTIFY_SECRET) {
    ctx.addIssue({ code: "custom", path: ["KEYWARD_NOTIFY_SECRET"], message: 'is required with KEYWARD_NOTIFY_FORMAT=standard (a whsec_… secret to sign with)' });
  }
  // Node refuses a header timeout longer than the request timeout (the headers are part of the request).
  if (env.KEYWARD_HTTP_HEADERS_TIMEOUT_MS > env.KEYWARD_HTTP_REQUEST_TIMEOUT_MS) {
    ctx.addIssue({
      code: "custom",
      path: ["KEYWARD_HTTP_HEADERS_TIMEOUT_MS"],
      message: `must not exceed KEYWARD_HTTP_REQUEST_TIMEOUT_MS (${env.KEYWARD_HTTP_REQUEST_TIMEOUT_MS})`,
    });
  }
});

export type KeywardEnv = z.infer<typeof envSchema>;

export class ConfigError extends Error {}

export function loadEnv(source: NodeJS.ProcessEnv = process.env): KeywardEnv {
  const parsed = envSchema.safeParse(source);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new ConfigError(`invalid configuration: ${problems}`);
  }
  return parsed.data;
}

export function dataDir(env: KeywardEnv): string {
  return path.resolve(env.KEYWARD_DATA_DIR);
}
