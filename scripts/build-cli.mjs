// Compiles the `keyward` command once, at install (package.json `prepare`), instead of at every run:
// lib/cli/main.ts and the lib/ modules it reaches are bundled by esbuild into dist/cli/keyward.js.
// bin/keyward.cjs runs that file while it is newer than every source listed in dist/cli/inputs.json, and
// falls back to transpiling lib/ with tsx otherwise (a source edited since, or no build at all).
//
// npm packages stay outside the bundle (required from node_modules at run time as before; INLINED below
// excepted): Prisma's runtime and its query-compiler wasm, PGlite (for carrying an old data directory over), the schema engine and Next
// are loaded from their own folders, where they find their files. The bundle lives two folders below the repository,
// like lib/<x>/, so the modules that locate prisma/ and .next/ from __dirname find the same root.
import { build } from "esbuild";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.join(root, "dist", "cli");

// Plain-JS packages bundled in: no files of their own to find, no native part, no state that Next's copy of
// lib/ shares with the CLI's in `keyward start` (the pool and Prisma client are shared: pg and Prisma stay
// external). Resolving their hundreds of files one by one cost ~90 ms of every command.
const INLINED = new Set(["zod", "jose", "commander"]);

await rm(outdir, { recursive: true, force: true }); // a failed build leaves nothing: the command falls back to tsx
const result = await build({
  absWorkingDir: root,
  entryPoints: ["lib/cli/main.ts"],
  outfile: path.join(outdir, "keyward.js"),
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  metafile: true,
  logLevel: "warning",
  plugins: [
    {
      // `import "server-only"` marks modules Next must keep out of client bundles; outside React's server
      // condition the package throws on import, so the CLI gets the empty module it stands for there.
      name: "server-only",
      setup(b) {
        b.onResolve({ filter: /^server-only$/ }, () => ({ path: "server-only", namespace: "empty" }));
        b.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: "", loader: "js" }));
      },
    },
    {
      // Every npm package stays external (required from node_modules at run time) except a few plain ones.
      name: "externals",
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, (args) => {
          if (args.path.startsWith("@/")) return undefined; // tsconfig's alias for the repository root
          const name = args.path.startsWith("@") ? args.path.split("/").slice(0, 2).join("/") : args.path.split("/")[0];
          return INLINED.has(name) ? undefined : { path: args.path, external: true };
        });
      },
    },
  ],
});

// The sources this bundle was made from, for bin/keyward.cjs's freshness check.
// (npm packages are rebuilt by `npm install` itself, which runs `prepare`.)
const inputs = Object.keys(result.metafile.inputs)
  .filter((p) => !p.includes(":") && !p.startsWith("node_modules/"))
  .sort();
await mkdir(outdir, { recursive: true });
await writeFile(path.join(outdir, "inputs.json"), JSON.stringify(inputs, null, 1) + "\n");
console.log(`dist/cli/keyward.js: ${inputs.length} sources`);
