/** `keyward source …`: senders and their TTLs. Input is parsed by the same schemas as POST/PATCH /api/v1/sources. */
import { InvalidArgumentError, type Command } from "commander";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { PRESETS, ttlOfParts } from "@/lib/retention/presets";
import { formatDuration } from "@/lib/sources/duration";
import { createSourceRequest, sourceParams, updateSourceRequest } from "@/lib/sources/schema";
import { createSource, extendLiveKeys, listSources, sourceReports, updateSource } from "@/lib/sources/sources";
import { duration, printTable, withDatabase } from "@/lib/cli/io";
import { registerSourceAdvice } from "./advice";

type PartOptions = {
  preset?: string;
  retryWindow?: number;
  queueLag?: number;
  clockSkew?: number;
  replay?: number;
  deadLetterRetention?: number | null;
  saveResults?: boolean;
};

/** `--save-results on|off`. */
function onOff(v: string): boolean {
  if (v === "on" || v === "true") return true;
  if (v === "off" || v === "false") return false;
  throw new InvalidArgumentError('must be "on" or "off"');
}

/** The options given, named as the API names them. */
function partsFrom(o: PartOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (o.preset !== undefined) out.preset = o.preset;
  if (o.retryWindow !== undefined) out.retryWindowSeconds = o.retryWindow;
  if (o.queueLag !== undefined) out.queueLagSeconds = o.queueLag;
  if (o.clockSkew !== undefined) out.clockSkewSeconds = o.clockSkew;
  if (o.replay !== undefined) out.replaySeconds = o.replay;
  if (o.deadLetterRetention !== undefined) out.deadLetterRetentionSeconds = o.deadLetterRetention;
  if (o.saveResults !== undefined) out.saveResults = o.saveResults;
  return out;
}

async function printWarnings(name: string): Promise<void> {
  const [report] = await sourceReports(name);
  for (const inv of report.invariants) if (!inv.ok) console.error(`warning: ${inv.message}`);
}

export function registerSource(program: Command): void {
  const source = program.command("source").description("senders and their TTLs");

  source
    .command("create <name>")
    .description("create a source; TTL = retry window + queue lag + clock skew + replay margin (or --preset)")
    .option("--preset <preset>", "start from a preset (keyward source presets); parts given too override it")
    .option("--retry-window <duration>", "the sender's longest retry window, e.g. 3d", duration)
    .option("--queue-lag <duration>", "margin for queue backlog before the claim, e.g. 1d", duration)
    .option("--clock-skew <duration>", "margin for clock skew, e.g. 5m", duration)
    .option("--replay <duration>", "margin for manual dead-letter replays, e.g. 3d", duration)
    .option("--dead-letter-retention <duration>", "how long this sender's dead letters are kept (checked against the TTL)", duration)
    .option("--save-results <on|off>", "let `complete` save a result its duplicates are answered with (default off)", onOff)
    .action(async (name: string, o: PartOptions) => {
      const request = parseInput(createSourceRequest, { name, ...partsFrom(o) });
      await withDatabase(async () => {
        const s = await createSource(request, cliPrincipal());
        console.log(`created source ${s.name}: TTL ${formatDuration(s.ttlSeconds)} (${s.ttlSeconds} s)${s.preset ? `, preset ${s.preset}` : ""}`);
        await printWarnings(s.name);
      });
    });

  source
    .command("update <name>")
    .description("change a source's parts, preset, dead-letter retention or saved results; applies to new claims (see `source extend`)")
    .option("--preset <preset>", "apply a preset's parts")
    .option("--retry-window <duration>", "the sender's longest retry window", duration)
    .option("--queue-lag <duration>", "queue-lag margin", duration)
    .option("--clock-skew <duration>", "clock-skew margin", duration)
    .option("--replay <duration>", "replay margin", duration)
    .option("--dead-letter-retention <duration>", "dead-letter retention (`none` clears it)", (v: string) => (v === "none" ? null : duration(v)))
    .option("--save-results <on|off>", "let `complete` save a result its duplicates are answered with", onOff)
    .action(async (name: string, o: PartOptions) => {
      const params = parseInput(sourceParams, { name });
      const change = parseInput(updateSourceRequest, partsFrom(o));
      await withDatabase(async () => {
        const s = await updateSource(params.name, change, cliPrincipal());
        console.log(`updated source ${s.name}: TTL ${formatDuration(s.ttlSeconds)} for new claims; live keys keep their expiry (keyward source extend ${s.name})`);
        if (change.saveResults !== undefined) console.log(`saved results ${s.saveResults ? "on" : "off"} for ${s.name}`);
        await printWarnings(s.name);
      });
    });

  source
    .command("extend <name>")
    .description("extend the source's live keys to its current TTL (never shortens)")
    .action(async (name: string) => {
      const params = parseInput(sourceParams, { name });
      await withDatabase(async () => {
        const r = await extendLiveKeys(params.name, cliPrincipal());
        console.log(`extended ${r.extended} live key${r.extended === 1 ? "" : "s"} of ${r.source} to TTL ${formatDuration(r.ttlSeconds)}`);
      });
    });

  source
    .command("presets")
    .description("list the TTL presets and where their numbers come from")
    .action(() => {
      printTable(
        PRESETS.map((p) => ({
          PRESET: p.name,
          TTL: formatDuration(ttlOfParts(p.parts)),
          "RETRY WINDOW": formatDuration(p.parts.retryWindowSeconds),
          "QUEUE LAG": formatDuration(p.parts.queueLagSeconds),
          "CLOCK SKEW": formatDuration(p.parts.clockSkewSeconds),
          REPLAY: formatDuration(p.parts.replaySeconds),
          FOR: p.label,
        })),
      );
    });

  source
    .command("list")
    .description("list sources with their TTL and its parts")
    .option("--json", "print JSON")
    .action(async (o: { json?: boolean }) => {
      await withDatabase(async () => {
        const rows = await listSources();
        if (o.json) return console.log(JSON.stringify(rows, null, 2));
        if (rows.length === 0) return console.log("no sources yet: keyward source create <name> --retry-window … (see --help)");
        printTable(
          rows.map((s) => ({
            NAME: s.name,
            TTL: formatDuration(s.ttlSeconds),
            "RETRY WINDOW": formatDuration(s.retryWindowSeconds),
            "QUEUE LAG": formatDuration(s.queueLagSeconds),
            "CLOCK SKEW": formatDuration(s.clockSkewSeconds),
            REPLAY: formatDuration(s.replaySeconds),
          })),
        );
      });
    });

  registerSourceAdvice(source, withDatabase);
}
