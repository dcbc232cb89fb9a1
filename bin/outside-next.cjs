// Loaded first wherever Keyward's TypeScript runs outside a Next bundle: the `keyward` command (bin/keyward.cjs,
// which also runs `keyward start`) and `npm run bench`.
//
// Server modules in lib/ open with `import "server-only"`. Inside Next that marker resolves to an empty module
// on the server (the `react-server` export condition) and fails the build when a client component imports
// one of them. Plain Node resolves the package's default export, which throws; here it is resolved the way
// Next's server resolves it. Vitest does the same with an alias (vitest.config.mts).
const Module = require("node:module");
const path = require("node:path");

const EMPTY = path.join(path.dirname(require.resolve("server-only")), "empty.js");
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return resolveFilename.call(this, request === "server-only" ? EMPTY : request, ...rest);
};
