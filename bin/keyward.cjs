#!/usr/bin/env node
// The `keyward` command: runs the TypeScript CLI in lib/cli through tsx's require hook.
require("tsx/cjs/api").register();
require("../lib/cli/main.ts");
