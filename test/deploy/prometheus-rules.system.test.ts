/**
 * The shipped Prometheus rules (deploy/prometheus/keyward-rules.yml): `promtool check rules` accepts them,
 * `promtool test rules` passes their unit tests (deploy/prometheus/tests), every alert has a firing and a
 * non-firing case there, and every alert carries `for:`, a severity, a summary that names Keyward and the
 * source when it is per source, and a runbook_url to a section that exists in docs/runbook.md.
 * Debian's `prometheus` package provides promtool (.ci/run installs it when missing).
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ROOT } from "@/test/setup/server";

const RULES = path.join(ROOT, "deploy/prometheus/keyward-rules.yml");
const TESTS = path.join(ROOT, "deploy/prometheus/tests");
const RUNBOOK = path.join(ROOT, "docs/runbook.md");

type Rule = { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
type RuleFile = { groups: { name: string; rules: Rule[] }[] };
type TestFile = { tests: { name: string; alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[] };

const rules = (parse(readFileSync(RULES, "utf8")) as RuleFile).groups.flatMap((g) => g.rules);
const alerts = rules.filter((r) => r.alert);
const testFiles = readdirSync(TESTS).filter((f) => f.endsWith(".yml")).map((f) => path.join(TESTS, f));

function promtool(...args: string[]): string {
  const r = spawnSync("promtool", args, { cwd: TESTS, encoding: "utf8" });
  if (r.error) throw new Error(`promtool is not installed (Debian: apt-get install prometheus; .ci/run does it): ${r.error.message}`);
  expect(r.status, `promtool ${args.join(" ")}:\n${r.stdout}${r.stderr}`).toBe(0);
  return r.stdout + r.stderr;
}

/** GitHub's anchor of a Markdown heading. */
const anchor = (heading: string) =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");

describe("deploy/prometheus/keyward-rules.yml", () => {
  it("promtool check rules accepts it", () => {
    expect(promtool("check", "rules", RULES)).toMatch(/SUCCESS: \d+ rules found/);
  });

  it("promtool test rules passes every unit test", () => {
    expect(testFiles.length).toBeGreaterThan(0);
    expect(promtool("test", "rules", ...testFiles)).toMatch(/SUCCESS/);
  });

  it("every alert has a case that fires on a synthetic series and one that does not", () => {
    const cases = testFiles.flatMap((f) => (parse(readFileSync(f, "utf8")) as TestFile).tests.flatMap((t) => t.alert_rule_test ?? []));
    const missing: string[] = [];
    for (const { alert } of alerts) {
      const mine = cases.filter((c) => c.alertname === alert);
      if (!mine.some((c) => c.exp_alerts.length > 0)) missing.push(`${alert}: no case where it fires`);
      if (!mine.some((c) => c.exp_alerts.length === 0)) missing.push(`${alert}: no case where it stays quiet`);
    }
    expect(missing).toEqual([]);
    const unknown = cases.map((c) => c.alertname).filter((name) => !alerts.some((a) => a.alert === name));
    expect(unknown, "test cases of alerts that do not exist").toEqual([]);
  });

  it("every alert has for:, a severity, a summary naming Keyward (and the source, when per source), and a runbook_url to a section of docs/runbook.md", () => {
    expect(alerts.length).toBeGreaterThanOrEqual(15);
    const headings = new Set(readFileSync(RUNBOOK, "utf8").split("\n").filter((l) => /^#{2,3} /.test(l)).map((l) => anchor(l.replace(/^#+ /, ""))));
    const problems: string[] = [];
    for (const a of alerts) {
      const p = (msg: string) => problems.push(`${a.alert}: ${msg}`);
      if (!a.for || !/^\d+[smh]$/.test(a.for)) p(`for: ${a.for}`);
      if (!["critical", "warning"].includes(a.labels?.severity ?? "")) p(`severity ${a.labels?.severity}`);
      const summary = a.annotations?.summary ?? "";
      if (!/Keyward/.test(summary)) p(`summary does not name Keyward: ${summary}`);
      if (/\bsource\b/.test(a.expr) && !summary.includes("{{ $labels.source }}")) p(`per-source alert whose summary does not name the source: ${summary}`);
      if (!a.annotations?.description) p("no description");
      const m = /^docs\/runbook\.md#([a-z0-9-]+)$/.exec(a.annotations?.runbook_url ?? "");
      if (!m) p(`runbook_url ${a.annotations?.runbook_url}`);
      else if (!headings.has(m[1])) p(`runbook_url #${m[1]}: no such section in docs/runbook.md`);
    }
    expect(problems).toEqual([]);
  });

  it("recording rules follow the level:metric:operations naming", () => {
    for (const r of rules.filter((x) => x.record)) expect(r.record).toMatch(/^keyward:[a-z0-9_]+:[a-z0-9_]+$/);
  });
});

