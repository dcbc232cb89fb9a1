import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: {
      "@": path.resolve(import.meta.dirname),
      // Server modules open with `import "server-only"`; outside Next it resolves as on Next's server (bin/outside-next.cjs).
      "server-only": path.resolve(import.meta.dirname, "node_modules/server-only/empty.js"),
    },
  },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/setup/global-setup.ts"],
    setupFiles: ["test/setup/setup-file.ts"],
    environment: "node",
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // expect.poll waits for a condition that must come to hold (a page rendered, a row written); vitest's 1 s
    // default is shorter than one server read on this loaded 2-core machine (the Overview picker's names read
    // missed it in a CI run). A poll only ever waits longer for the same assertion.
    expect: { poll: { timeout: 10_000 } },
    // Test files share one fresh database; each uses its own source names.
    fileParallelism: true,
    maxWorkers: 2,
    // New replays retry on the short schedule they had before schedules were per replay (5 attempts, 1 s
    // doubling to 16 s), so tests of failing destinations end in seconds; the default (12 attempts, 10 s
    // to 1 h) is unit-tested, and test/e2e/replay-truth.test.ts sets schedules per replay.
    env: { KEYWARD_REPLAY_RETRY_MAX_ATTEMPTS: "5", KEYWARD_REPLAY_RETRY_INITIAL_MS: "1000", KEYWARD_REPLAY_RETRY_MAX_DELAY_MS: "16000" },
  },
});
