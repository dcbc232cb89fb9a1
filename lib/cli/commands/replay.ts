/** `keyward replay …`: progress and control of dead-letter replays (they are started in the console or the API). */
import type { Command } from "commander";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { changeReplay, getReplay, listReplays } from "@/lib/replay/replays";
import { describeOutcome } from "@/lib/replay/outcome";
import { retryFailed } from "@/lib/replay/retry-failed";
import { listReplaysQuery, replayParams } from "@/lib/replay/schema";
import { printTable, withDatabase } from "@/lib/cli/io";

export function registerReplay(program: Command): void {
  const replay = program.command("replay").description("dead-letter replays: progress and control (start them in the console or the API)");

  replay
    .command("list")
    .description("replays, newest first")
    .option("--source <name>", "only this source's")
    .option("--status <status>", "running, paused, cancelled or completed")
    .option("--state <state>", "running (running or paused) or finished (completed or cancelled)")
    .option("--outcome <outcome>", "finished replays that ended so: succeeded, partial, failed or cancelled")
    .option("--limit <n>", "at most this many (1-200)", "50")
    .option("--json", "print JSON")
    .action(async (o: { source?: string; status?: string; state?: string; outcome?: string; limit: string; json?: boolean }) => {
      // The same query as GET /api/v1/replays?source&status&state&outcome&limit.
      const q = parseInput(listReplaysQuery, { source: o.source, status: o.status, state: o.state, outcome: o.outcome, limit: o.limit });
      await withDatabase(async () => {
        const { items } = await listReplays(q);
        if (o.json) return console.log(JSON.stringify(items, null, 2));
        if (items.length === 0) return console.log("no replays");
        printTable(
          items.map((r) => ({
            ID: r.id,
            SOURCE: r.source,
            STATUS: r.status,
            TOTAL: String(r.total),
            DELIVERED: String(r.counts.delivered),
            FAILED: String(r.counts.failed),
            SKIPPED: String(r.counts.skipped_unsafe),
            // A finished replay has an outcome, a running or paused one a health: never "ok" for a replay that ended.
            OUTCOME: r.outcome ?? "-",
            HEALTH: r.outcome ? "-" : r.health.state,
            FORCED: r.forced ? "yes" : "no",
            BY: r.createdBy,
            CREATED: r.createdAt,
          })),
        );
      });
    });

  replay
    .command("show <id>")
    .description("one replay: progress, counts by outcome, failures with their reasons")
    .option("--json", "print JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      await withDatabase(async () => {
        const r = await getReplay(parseInput(replayParams, { id }).id);
        if (o.json) return console.log(JSON.stringify(r, null, 2));
        const done = r.total - r.counts.pending - r.counts.delivering;
        console.log(`replay ${r.id} of ${r.source}: ${r.status}, ${done}/${r.total} settled`);
        if (r.outcome) console.log(`  outcome ${r.outcome}: ${describeOutcome(r.outcome, r)}`);
        console.log(
          `  delivered ${r.counts.delivered}, failed ${r.counts.failed}, skipped_unsafe ${r.counts.skipped_unsafe}, ` +
            `cancelled ${r.counts.cancelled}, pending ${r.counts.pending}, delivering ${r.counts.delivering}`,
        );
        console.log(`  include ${r.include.join(", ")}; ${r.ratePerSecond}/s, concurrency ${r.concurrency}; by ${r.createdBy} at ${r.createdAt}`);
        if (r.destination) console.log(`  ${r.status === "completed" || r.status === "cancelled" ? "sent" : "sending"} to ${r.destination}`);
        if (!r.outcome) console.log(`  health ${r.health.state}${r.health.reason ? `: ${r.health.reason}` : ""}`);
        if (r.health.lastError) console.log(`  last error at ${r.health.lastErrorAt ?? "-"}: ${r.health.lastError}`);
        if (r.forced) console.log(`  forced: ${r.forceReason}`);
        if (r.failures.length) {
          console.log("failures:");
          printTable(r.failures.map((f) => ({ EVENT: f.eventId, OUTCOME: f.outcome, ATTEMPTS: String(f.attempts), REASON: f.lastError ?? "-" })));
        }
      });
    });

  replay
    .command("retry-failed <id>")
    .description("a new preflight of a finished replay's failed items (confirm it in the console or with POST /api/v1/replays)")
    .option("--json", "print the preflight as JSON")
    .action(async (id: string, o: { json?: boolean }) => {
      // As POST /api/v1/replays/{id}/retry-failed (no body; a malformed or unknown id is a 404).
      await withDatabase(async () => {
        const pf = await retryFailed(parseInput(replayParams, { id }).id, cliPrincipal());
        if (o.json) return console.log(JSON.stringify(pf, null, 2));
        const c = pf.counts;
        console.log(`preflight ${pf.preflightId} of ${pf.source} (retry of replay ${id}): ${c.total} item(s), valid until ${pf.validUntil}`);
        console.log(
          `  alive ${c.alive}, expiring ${c.expiring}, expired_processed ${c.expired_processed}, never_processed ${c.never_processed}, in_flight ${c.in_flight}`,
        );
      });
    });

  for (const action of ["pause", "resume", "cancel"] as const) {
    replay
      .command(`${action} <id>`)
      .description(`${action} a replay (recorded in the action log)`)
      .action(async (id: string) => {
        await withDatabase(async () => {
          const r = await changeReplay(parseInput(replayParams, { id }).id, action, cliPrincipal());
          console.log(`replay ${r.id}: ${r.status}`);
        });
      });
  }
}
