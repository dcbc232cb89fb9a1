/**
 * The one configuration loader. Every setting comes from the environment, is validated once with zod,
 * and fails start-up with a message naming the variable.
 */
import path from "node:path";
import { z } from "zod";

const intFrom = (def: number, min: number, max: number) =>
  z.coerce.number().int().min(min).max(max).default(def);

const envSchema = z.object({
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, "must be a postgresql:// URL")
    .optional()
    .or(z.literal("").transform(() => undefined)),
  KEYWARD_DATA_DIR: z.string().min(1).default(".keyward"),
  KEYWARD_EMBEDDED_PORT: intFrom(0, 0, 65535),
  PORT: intFrom(3000, 0, 65535),
  HOSTNAME: z.string().min(1).default("localhost"),
  KEYWARD_DB_POOL_MAX: intFrom(10, 1, 200),
  KEYWARD_DB_CONNECT_TIMEOUT_MS: intFrom(3000, 100, 60000),
  KEYWARD_DB_STATEMENT_TIMEOUT_MS: intFrom(5000, 100, 600000),
  // Idle connections are kept 5 minutes: a reopened connection costs ~12 ms plus a slow first claim.
  KEYWARD_DB_IDLE_TIMEOUT_MS: intFrom(300000, 0, 86400000),
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
