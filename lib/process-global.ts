/**
 * Process-wide singletons: the one place Keyward keeps state that must exist once per process.
 *
 * Why not a module-level `const`: one process can hold several copies of a module. `keyward start` loads
 * lib/ itself (the fast claim path, the jobs) and Next loads it again inside each bundled route; `next dev`
 * re-evaluates modules on every reload; tests reset modules. A pool, a metrics registry or a counter kept
 * in a module variable would exist once per copy (two pools, counts the shutdown flush never sees). So such
 * state lives on globalThis, under one namespace (`globalThis.__keyward[name]`), created on first use and
 * shared by every copy of the module afterwards.
 *
 * A value that is replaced or dropped later (a cache entry, a closed pool) goes in a box the module mutates:
 * `const slot = processGlobal("db", () => ({ current: undefined as Db | undefined }))`.
 *
 * Names in use: auth, claimCounts, db, dedupMode, jobRegistries, migrationsShipped, namedStatements, prometheus,
 * readinessCheck, replayWakers, unavailableLog.
 */

declare global {
  var __keyward: Record<string, unknown> | undefined;
}

/** The process's value under `name`, made by `create()` the first time any copy of any module asks. */
export function processGlobal<T>(name: string, create: () => T): T {
  const space = (globalThis.__keyward ??= Object.create(null) as Record<string, unknown>);
  if (!(name in space)) space[name] = create();
  return space[name] as T;
}
