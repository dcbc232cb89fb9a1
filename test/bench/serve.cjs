// Fallback launcher for the HTTP scenarios, used only when `node bin/keyward.cjs start --no-build`
// exits before it is ready: the same startServer() that the CLI's `start` command calls, loaded the
// same way (tsx's require hook), without the command-line layer in between.
require("tsx/cjs/api").register();
require("../../lib/server/start.ts")
  .startServer({ build: false })
  .catch((err) => {
    console.error(`keyward: ${err && err.message ? err.message : err}`);
    process.exit(1);
  });
