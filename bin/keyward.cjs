#!/usr/bin/env node
// The `keyward` command. Runs the CLI compiled at install (dist/cli/keyward.js, scripts/build-cli.mjs) when
// it is newer than every source it was built from; otherwise (a source edited since, or never built)
// transpiles lib/cli/main.ts with tsx's require hook on the fly, as a development checkout does.
require("./outside-next.cjs"); // `import "server-only"` resolves to its empty module outside Next
const fs = require("node:fs");
const path = require("node:path");

const root = path.join(__dirname, "..");
const compiled = path.join(root, "dist", "cli", "keyward.js");

function compiledIsCurrent() {
  try {
    const builtAt = fs.statSync(compiled).mtimeMs;
    const inputs = JSON.parse(fs.readFileSync(path.join(root, "dist", "cli", "inputs.json"), "utf8"));
    return inputs.length > 0 && inputs.every((file) => fs.statSync(path.join(root, file)).mtimeMs <= builtAt);
  } catch {
    return false; // no build, or a source it lists is gone
  }
}

if (compiledIsCurrent()) {
  require(compiled);
} else {
  require("tsx/cjs/api").register();
  require(path.join(root, "lib", "cli", "main.ts"));
}
