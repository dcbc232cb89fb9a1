/**
 * "Build if needed" for `keyward start`: regenerates the Prisma client when it is missing and runs
 * `next build` when there is no build or a source file is newer than it.
 */
import "server-only";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";

export const ROOT = path.resolve(__dirname, "../..");

const SOURCES = ["app", "components", "lib", "prisma/schema.prisma", "next.config.ts", "tsconfig.json", "package-lock.json"];
const SKIP = new Set(["node_modules", ".next", "generated"]);

function newestMtime(target: string): number {
  if (!existsSync(target)) return 0;
  const stat = statSync(target);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(target)) {
    if (!SKIP.has(entry)) newest = Math.max(newest, newestMtime(path.join(target, entry)));
  }
  return newest;
}

function run(args: string[], env: NodeJS.ProcessEnv = process.env): void {
  const result = spawnSync(process.execPath, args, { cwd: ROOT, stdio: "inherit", env });
  if (result.status !== 0) throw new Error(`\`${args.slice(1).join(" ")}\` failed (exit ${result.status})`);
}

export function ensureGeneratedClient(): void {
  if (existsSync(path.join(ROOT, "lib/db/generated/client.ts"))) return;
  console.log("[keyward] generating the Prisma client …");
  // generate needs no schema engine; pointing the variable anywhere stops the CLI from downloading one.
  run([require.resolve("prisma/build/index.js"), "generate"], { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: "/bin/false" });
}

/** When the current build started reading sources: a file changed after that is not in it. */
const STARTED = path.join(ROOT, ".next", "keyward-build-started");

function isStale(): boolean {
  const buildId = path.join(ROOT, ".next", "BUILD_ID");
  if (!existsSync(buildId)) return true;
  const started = existsSync(STARTED) ? Number(readFileSync(STARTED, "utf8")) || 0 : statSync(buildId).mtimeMs;
  const changed = Math.max(...SOURCES.map((s) => newestMtime(path.join(ROOT, s))));
  return started <= changed;
}

const LOCK = path.join(ROOT, ".next-build.lock");
const LOCK_STALE_MS = 10 * 60_000;

/** Takes the build lock (a directory: mkdir is atomic); false when another process holds it. */
function takeLock(): boolean {
  try {
    mkdirSync(LOCK);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
}

/**
 * Builds when stale. Two processes (a server start and a test run, say) never build at once: the
 * second waits for the first's lock, then finds the build current.
 */
export function buildIfNeeded(): void {
  if (!isStale()) return;
  // Bounded: a holder's lock counts as abandoned after LOCK_STALE_MS; past twice that (a queue of builders),
  // give up with a message rather than wait on.
  const giveUpAt = Date.now() + 2 * LOCK_STALE_MS;
  while (!takeLock()) {
    const age = existsSync(LOCK) ? Date.now() - statSync(LOCK).mtimeMs : 0;
    if (age > LOCK_STALE_MS) rmSync(LOCK, { recursive: true, force: true });
    else if (Date.now() > giveUpAt) throw new Error(`another build has held ${LOCK} for too long; remove it if no build is running`);
    else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  }
  try {
    if (!isStale()) return;
    const first = !existsSync(path.join(ROOT, ".next", "BUILD_ID"));
    console.log(first ? "[keyward] building the console …" : "[keyward] sources changed since the last build; rebuilding …");
    const started = Date.now();
    run([require.resolve("next/dist/bin/next"), "build"]);
    writeFileSync(STARTED, String(started));
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
