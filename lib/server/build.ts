/**
 * "Build if needed" for `keyward start`: regenerates the Prisma client when it is missing and runs
 * `next build` when there is no build or a source file is newer than it.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
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

export function buildIfNeeded(): void {
  const buildId = path.join(ROOT, ".next", "BUILD_ID");
  const built = existsSync(buildId) ? statSync(buildId).mtimeMs : 0;
  const changed = Math.max(...SOURCES.map((s) => newestMtime(path.join(ROOT, s))));
  if (built > changed) return;
  console.log(built ? "[keyward] sources changed since the last build; rebuilding …" : "[keyward] building the console …");
  run([require.resolve("next/dist/bin/next"), "build"]);
}
