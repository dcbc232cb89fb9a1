#!/usr/bin/env node
// The `keyward` command: runs the TypeScript CLI in lib/cli through tsx's require hook.
// The project's tsconfig wherever the command runs from (its "@/…" paths are resolved through it).
process.env.TSX_TSCONFIG_PATH ??= require("node:path").join(__dirname, "..", "tsconfig.json");
require("tsx/cjs/api").register();
require("../lib/cli/main.ts");
