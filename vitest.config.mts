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
    // Test files share one fresh database; each uses its own source names.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
