import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { alias: { "@": path.resolve(import.meta.dirname) } },
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
