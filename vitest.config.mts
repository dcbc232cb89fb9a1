/**
 * The test suite in four tiers, run one after another by `npm test` (CONTRIBUTING.md):
 *   unit    *.unit.test.ts    pure code; no database, no service, no child process
 *   db      *.db.test.ts      in-process against PostgreSQL, each file on its own copy of a migrated template
 *   system  *.system.test.ts  spawned servers and CLIs, brokers, Redis, PgBouncer, fault proxies
 *   e2e     *.e2e.test.ts     the console in headless Chromium against a real server
 * `npm run test:<tier>` runs one. A test file's tier is its name's second extension; a file with none runs nowhere,
 * and test/conventions.unit.test.ts fails on it.
 */
import path from "node:path";
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

const TIERS = ["unit", "db", "system", "e2e"] as const;

function tier(name: (typeof TIERS)[number]): TestProjectInlineConfiguration {
  const database = name !== "unit";
  return {
    extends: true,
    test: {
      name,
      include: [`test/**/*.${name}.test.ts`],
      // The tiers run one after another: a browser test never shares the two cores with a fault test's brokers.
      sequence: { groupOrder: TIERS.indexOf(name) },
      globalSetup: [
        ...(database ? ["test/setup/template-db.ts"] : []),
        ...(name === "system" || name === "e2e" ? ["test/setup/build.ts"] : []),
        ...(name === "e2e" ? ["test/setup/chromium-server.ts"] : []),
      ],
      setupFiles: database ? ["test/setup/setup-file.ts"] : [],
      // Pure code shares one module graph per worker (most of the tier's time went to importing it again per
      // file); the other tiers keep a fresh graph per file, since their modules hold pools, caches and timers.
      isolate: database,
    },
  };
}

export default defineConfig({
  resolve: {
    alias: {
      "@": path.resolve(import.meta.dirname),
      // Server modules open with `import "server-only"`; outside Next it resolves as on Next's server (bin/outside-next.cjs).
      "server-only": path.resolve(import.meta.dirname, "node_modules/server-only/empty.js"),
    },
  },
  test: {
    projects: TIERS.map(tier),
    environment: "node",
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // expect.poll waits for a condition that must come to hold (a page rendered, a row written); vitest's 1 s
    // default is shorter than one server read on this loaded 2-core machine. A poll only ever waits longer
    // for the same assertion.
    expect: { poll: { timeout: 10_000 } },
    maxWorkers: 2,
    // New replays retry on the short schedule they had before schedules were per replay (5 attempts, 1 s
    // doubling to 16 s), so tests of failing destinations end in seconds; the default (12 attempts, 10 s
    // to 1 h) is unit-tested, and test/e2e/replay-truth.e2e.test.ts sets schedules per replay.
    env: { KEYWARD_REPLAY_RETRY_MAX_ATTEMPTS: "5", KEYWARD_REPLAY_RETRY_INITIAL_MS: "1000", KEYWARD_REPLAY_RETRY_MAX_DELAY_MS: "16000" },
  },
});
