/**
 * `keyward source advice <name> [--window 30d] [--json]`: the TTL advisor on the command line — the
 * same answer as GET /api/v1/sources/{name}/advice (lib/retention/advice.ts), as JSON or as text.
 */
import type { Command } from "commander";
import { getAdvice } from "@/lib/retention/advice";
import { adviceQuery, type AdviceResponse } from "@/lib/retention/advice-schema";
import { parseInput } from "@/lib/http/validate";
import { humanDuration, partsText } from "@/lib/retention/advisor";
import { formatDuration } from "@/lib/sources/duration";
import { formatBytes as bytes } from "@/lib/format";

const count = (n: number) => new Intl.NumberFormat("en-US").format(n);

const upTo = (s: number | null) => (s === null ? "-" : `≤ ${humanDuration(s)}`);

/** The advice as the terminal shows it. Pure. */
export function adviceText(a: AdviceResponse): string {
  const o = a.observed;
  const lines: string[] = [];
  lines.push(`${a.source}, last ${a.window}`);
  lines.push(
    `  observed:    ${count(o.duplicates)} duplicate${o.duplicates === 1 ? "" : "s"}` +
      (o.duplicates ? `; age p50 ${upTo(o.ageP50Seconds)}, p99 ${upTo(o.ageP99Seconds)}, p99.9 ${upTo(o.ageP999Seconds)}, max ${humanDuration(o.maxAgeSeconds ?? 0)}` : "") +
      `; ${count(o.lateDuplicates)} late duplicate${o.lateDuplicates === 1 ? "" : "s"} (processed twice)` +
      (o.lateEvidence.replays > 0 ? `, ${count(o.lateEvidence.replays)} of them by an operator's forced replay (not evidence)` : ""),
  );
  lines.push(`  verdict:     ${a.verdict.badge}: ${a.verdict.text}`);
  const peak = Math.max(1, ...o.histogram.map((b) => b.count));
  if (o.duplicates > 0) {
    for (const b of o.histogram) {
      const label = b.leSeconds === null ? "> 90 d" : `≤ ${humanDuration(b.leSeconds)}`;
      const bar = "█".repeat(Math.ceil((b.count / peak) * 30));
      lines.push(`    ${label.padEnd(9)} ${bar}${b.count ? ` ${count(b.count)}` : ""}`);
    }
  }
  lines.push(`  current:     TTL ${formatDuration(a.current.ttlSeconds)} (${partsText(a.current.parts)}), projected ${bytes(a.projection.currentBytes)}`);
  if (a.recommended) {
    const r = a.recommended;
    lines.push(`  recommended: TTL ${formatDuration(r.ttlSeconds)} (${partsText(r.parts)}), projected ${bytes(a.projection.recommendedBytes ?? 0)}`);
    for (const reason of r.reasons) lines.push(`    - ${reason}`);
    if (r.ttlSeconds !== a.current.ttlSeconds || partsText(r.parts) !== partsText(a.current.parts)) {
      const p = r.parts;
      lines.push(
        `  apply with:  keyward source update ${a.source} --retry-window ${formatDuration(p.retryWindowSeconds)} --queue-lag ${formatDuration(p.queueLagSeconds)} ` +
          `--clock-skew ${formatDuration(p.clockSkewSeconds)} --replay ${formatDuration(p.replaySeconds)}`,
      );
    }
  } else {
    lines.push(`  recommended: none. ${a.reason}`);
  }
  if (o.lateDuplicateExamples.length) {
    lines.push("  late duplicates (longest gaps):");
    for (const e of o.lateDuplicateExamples) {
      lines.push(`    ${e.eventId}  first ${e.firstClaimAt}  again ${e.lateClaimAt}  gap ${humanDuration(e.gapSeconds)}`);
    }
  }
  return lines.join("\n");
}

/** Adds `advice` to the `source` command group; `withDatabase` is main.ts's. */
export function registerSourceAdvice(source: Command, withDatabase: (work: () => Promise<void>) => Promise<void>): void {
  source
    .command("advice <name>")
    .description("is the TTL right for the traffic that arrives? observed duplicate ages, late duplicates, a recommended TTL with reasons")
    .option("--window <duration>", "how far back to look, 1h to 90d", "30d")
    .option("--json", "print the API's JSON (GET /api/v1/sources/{name}/advice)")
    .action(async (name: string, o: { window: string; json?: boolean }) => {
      await withDatabase(async () => {
        const advice = await getAdvice(name, parseInput(adviceQuery, { window: o.window }).window);
        console.log(o.json ? JSON.stringify(advice, null, 2) : adviceText(advice));
      });
    });
}
