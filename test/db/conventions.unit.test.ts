/**
 * The data-access and jobs conventions (docs/architecture.md, "Data access: the convention" and "A periodic
 * job"), held as grep-able facts of lib/: a change that brings a second way back fails here.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "../..");

function libFiles(dir = path.join(ROOT, "lib")): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === "generated" ? [] : libFiles(full);
    return /\.tsx?$/.test(name) ? [full] : [];
  });
}

/** lib/ files (relative to the repository) whose code, comments left out, matches `re`. */
function filesMatching(re: RegExp): string[] {
  return libFiles()
    .filter((f) => re.test(readFileSync(f, "utf8").replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, "")))
    .map((f) => path.relative(ROOT, f));
}

describe("lib/ conventions", () => {
  it("runs periodic work only through lib/jobs: no setInterval elsewhere", () => {
    expect(filesMatching(/\bsetInterval\(/).filter((f) => !f.startsWith("lib/jobs/"))).toEqual([]);
  });

  it("opens transactions only through withTransaction, but for the two bootstrap exceptions", () => {
    expect(filesMatching(/["'`]BEGIN\b/).sort()).toEqual(["lib/db/migrate.ts", "lib/db/pglite-upgrade.ts"]);
  });

  it("builds placeholders only with sqlParams, and reaches Prisma only through a handle", () => {
    expect(filesMatching(/\$\$\{\w+\.push\(/)).toEqual(["lib/db/sql.ts"]);
    expect(filesMatching(/\bprisma\(\)/).filter((f) => !f.startsWith("lib/db/"))).toEqual([]);
  });

  it("has one raw-SQL entry point: no statement through a handle's own methods or a Queryable", () => {
    expect(filesMatching(/\b(db|tx)\.(query|execute|raw)\b/).filter((f) => f !== "lib/db/sql.ts")).toEqual([]);
    expect(filesMatching(/\bQueryable\b/)).toEqual([]);
  });

  it("reads rows only through a declared row schema: no query<Row> type argument casting them", () => {
    expect(filesMatching(/(?<![.\w])(query|readQuery|queryOrThrow)<(?!S extends)/)).toEqual([]);
  });
});
