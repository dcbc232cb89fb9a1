// Reads vitest's JSON report (`--reporter=json --outputFile.json=FILE`) and prints each tier's wall time (from
// the first of its files to start to the last to end), its counts, and the closing line "N passed, N failed".
import { readFileSync } from "node:fs";

const report = JSON.parse(readFileSync(process.argv[2], "utf8"));
const tiers = new Map();
for (const file of report.testResults) {
  const tier = /\.(unit|db|system|e2e)\.test\.ts$/.exec(file.name)?.[1] ?? "none";
  const t = tiers.get(tier) ?? { start: Infinity, end: 0, files: 0, passed: 0, failed: 0 };
  t.start = Math.min(t.start, file.startTime);
  t.end = Math.max(t.end, file.endTime);
  t.files++;
  for (const a of file.assertionResults) {
    if (a.status === "passed") t.passed++;
    else if (a.status === "failed") t.failed++;
  }
  tiers.set(tier, t);
}
for (const name of ["unit", "db", "system", "e2e", "none"]) {
  const t = tiers.get(name);
  if (!t) continue;
  const seconds = Math.round((t.end - t.start) / 1000);
  console.log(`${name.padEnd(6)} ${String(seconds).padStart(5)} s  ${t.files} files, ${t.passed} passed, ${t.failed} failed`);
}
const slowest = [...report.testResults].sort((a, b) => b.endTime - b.startTime - (a.endTime - a.startTime)).slice(0, 8);
console.log("slowest files: " + slowest.map((f) => `${f.name.replace(/^.*?\/test\//, "test/")} ${Math.round((f.endTime - f.startTime) / 1000)} s`).join(", "));
console.log(`tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests} skipped`);
