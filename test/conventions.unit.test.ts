/**
 * The test suite's own conventions (CONTRIBUTING.md): every test file belongs to one tier, and no test sleeps to
 * synchronise (test/setup/time.ts).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const TEST = path.resolve(import.meta.dirname);

function files(dir = TEST): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? files(full) : /\.tsx?$/.test(name) ? [path.relative(path.dirname(TEST), full)] : [];
  });
}

const code = (f: string) => readFileSync(path.join(TEST, "..", f), "utf8").replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, "");

describe("the test suite", () => {
  it("puts every test file in one tier: name.<unit|db|system|e2e>.test.ts", () => {
    const tests = files().filter((f) => f.endsWith(".test.ts"));
    expect(tests.length).toBeGreaterThan(100);
    expect(tests.filter((f) => !/\.(unit|db|system|e2e)\.test\.ts$/.test(f))).toEqual([]);
  });

  it("has no sleep but timePasses: a promise around setTimeout, or a sleep helper, is a wait on time", () => {
    const sleeps = /new Promise[^;]*setTimeout\(\s*\(?\s*\w*\s*\)?\s*=?>?\s*\w+\s*,|\bconst (sleep|pause|delay) = /;
    expect(files().filter((f) => f !== "test/setup/time.ts" && sleeps.test(code(f)))).toEqual([]);
  });
});
