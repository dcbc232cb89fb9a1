/**
 * The `keyward` command line. Every database command opens the same database the server uses
 * (DATABASE_URL, or the embedded one, shared with a running server through its port), prints to
 * stdout, reports errors on stderr and exits non-zero on failure.
 */
import { Command, InvalidArgumentError } from "commander";
import { KeywardError } from "../errors";
import { migrationTarget, openDatabase } from "../db/open";
import { migrate } from "../db/migrate";
import { closeDb } from "../db/client";
import { parseDuration, formatDuration } from "../sources/duration";
import { createSource, extendLiveKeys, listSources, sourceReports, updateSource } from "../sources/sources";
import { PRESETS, ttlOfParts } from "../retention/presets";
import { createApiKey, listApiKeys, revokeApiKey } from "../auth/api-keys";
import { cliPrincipal } from "../auth/principal";
import { ROLES } from "../auth/roles";
import { createUser, listUsers, resetPassword, updateUser } from "../auth/users";
import { SCOPES } from "../auth/schema";
import { dropExpiredAuditPartitions, ensureAuditPartitions } from "../audit/partitions";
import { pruneNow } from "../retention/prune";
import { pruneRequest } from "../retention/prune-schema";
import { applyDedupModeSetting, disablePartitionMode, enablePartitionMode, partitionStatus } from "../retention/partitions";
import { parseOrThrow } from "../http/validate";
import { changeReplay, getReplay, listReplays } from "../replay/replays";
import { retryFailed } from "../replay/retry-failed";

const program = new Command()
  .name("keyward")
  .description("Webhook and event idempotency: claim once, expire deliberately, audit, replay safely.")
  .showHelpAfterError()
  .configureOutput({ outputError: (text, write) => write(text) });

/** Runs `work` against the database (applying pending migrations first), then releases it. */
async function withDatabase(work: () => Promise<void>): Promise<void> {
  const database = await openDatabase();
  try {
    await migrate(migrationTarget(database).url);
    await work();
  } finally {
    await closeDb();
    await database.close();
  }
}

function duration(value: string): number {
  try {
    return parseDuration(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function printTable(rows: Record<string, string>[]): void {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i])).join("  ").trimEnd();
  console.log(line(cols));
  for (const r of rows) console.log(line(cols.map((c) => r[c])));
}

const iso = (d: Date | null) => (d ? d.toISOString() : "-");

program
  .command("start")
  .description("build if needed, migrate, and serve the console and API (embedded database unless DATABASE_URL is set)")
  .option("--no-build", "serve the existing build without checking whether it is current")
  .action(async (opts: { build: boolean }) => {
    // required lazily so that only this command loads Next (tsx's require hook resolves the .ts file)
    const { startServer } = require("../server/start") as typeof import("../server/start");
    await startServer({ build: opts.build });
  });

program
  .command("migrate")
  .description("apply pending migrations from prisma/migrations")
  .action(async () => {
    const database = await openDatabase();
    try {
      const target = migrationTarget(database);
      console.log(`database: ${target.description}`);
      const applied = await migrate(target.url);
      console.log(applied.length ? `applied: ${applied.join(", ")}` : "schema is up to date; nothing to apply");
      const created = await ensureAuditPartitions();
      if (created > 0) console.log(`created ${created} monthly audit partition(s) ahead`);
      const dedup = await applyDedupModeSetting();
      if (dedup) console.log(dedup);
      const dropped = await dropExpiredAuditPartitions();
      if (dropped.length > 0) console.log(`dropped audit months past retention: ${dropped.join(", ")}`);
    } finally {
      await closeDb();
      await database.close();
    }
  });

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
  .action(async (name: string, o: PartOptions) => {
    await withDatabase(async () => {
      const s = await createSource({ name, ...partsFrom(o) } as never, cliPrincipal());
      console.log(`created source ${s.name}: TTL ${formatDuration(s.ttlSeconds)} (${s.ttlSeconds} s)${s.preset ? `, preset ${s.preset}` : ""}`);
      await printWarnings(s.name);
    });
  });

source
  .command("update <name>")
  .description("change a source's parts, preset or dead-letter retention; applies to new claims (see `source extend`)")
  .option("--preset <preset>", "apply a preset's parts")
  .option("--retry-window <duration>", "the sender's longest retry window", duration)
  .option("--queue-lag <duration>", "queue-lag margin", duration)
  .option("--clock-skew <duration>", "clock-skew margin", duration)
  .option("--replay <duration>", "replay margin", duration)
  .option("--dead-letter-retention <duration>", "dead-letter retention (`none` clears it)", (v: string) => (v === "none" ? null : duration(v)))
  .action(async (name: string, o: PartOptions) => {
    await withDatabase(async () => {
      const s = await updateSource(name, partsFrom(o), cliPrincipal());
      console.log(`updated source ${s.name}: TTL ${formatDuration(s.ttlSeconds)} for new claims; live keys keep their expiry (keyward source extend ${s.name})`);
      await printWarnings(s.name);
    });
  });

source
  .command("extend <name>")
  .description("extend the source's live keys to its current TTL (never shortens)")
  .action(async (name: string) => {
    await withDatabase(async () => {
      const r = await extendLiveKeys(name, cliPrincipal());
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

type PartOptions = {
  preset?: string;
  retryWindow?: number;
  queueLag?: number;
  clockSkew?: number;
  replay?: number;
  deadLetterRetention?: number | null;
};

function partsFrom(o: PartOptions) {
  const out: Record<string, unknown> = {};
  if (o.preset !== undefined) out.preset = o.preset;
  if (o.retryWindow !== undefined) out.retryWindowSeconds = o.retryWindow;
  if (o.queueLag !== undefined) out.queueLagSeconds = o.queueLag;
  if (o.clockSkew !== undefined) out.clockSkewSeconds = o.clockSkew;
  if (o.replay !== undefined) out.replaySeconds = o.replay;
  if (o.deadLetterRetention !== undefined) out.deadLetterRetentionSeconds = o.deadLetterRetention;
  return out as Record<string, never>;
}

async function printWarnings(name: string): Promise<void> {
  const [report] = await sourceReports(name);
  for (const inv of report.invariants) if (!inv.ok) console.error(`warning: ${inv.message}`);
}

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

const apikey = program.command("apikey").description("API keys for services (the key is shown once)");

apikey
  .command("create")
  .description("create an API key and print it once")
  .requiredOption("--name <name>", "a name for the key, e.g. the calling service")
  .requiredOption("--scopes <scopes>", `comma-separated: ${SCOPES.join(", ")}`, (v: string) =>
    v.split(",").map((s) => s.trim()).filter(Boolean),
  )
  .action(async (o: { name: string; scopes: string[] }) => {
    await withDatabase(async () => {
      const k = await createApiKey({ name: o.name, scopes: o.scopes }, cliPrincipal());
      console.error(`created API key ${k.name} (id ${k.id}, scopes ${k.scopes.join(",")}). It is shown once; store it now:`);
      console.log(k.key);
    });
  });

apikey
  .command("list")
  .description("list API keys (never the keys themselves)")
  .option("--json", "print JSON")
  .action(async (o: { json?: boolean }) => {
    await withDatabase(async () => {
      const rows = await listApiKeys();
      if (o.json) return console.log(JSON.stringify(rows, null, 2));
      if (rows.length === 0) return console.log("no API keys yet: keyward apikey create --name <n> --scopes claims:write");
      printTable(
        rows.map((k) => ({
          ID: k.id,
          NAME: k.name,
          SCOPES: k.scopes.join(","),
          CREATED: iso(k.createdAt),
          "LAST USED": iso(k.lastUsedAt),
          REVOKED: iso(k.revokedAt),
        })),
      );
    });
  });

apikey
  .command("revoke <idOrName>")
  .description("revoke an API key; it stops working at once")
  .action(async (idOrName: string) => {
    await withDatabase(async () => {
      const k = await revokeApiKey(idOrName, cliPrincipal());
      console.log(`revoked API key ${k.name} (id ${k.id}) at ${iso(k.revokedAt)}`);
    });
  });

const user = program.command("user").description("console users (viewer, operator, admin)");

user
  .command("create <name>")
  .description("create a console user; prompts for a password on a terminal, or generates one and prints it once")
  .requiredOption("--role <role>", `one of ${ROLES.join(", ")}`)
  .option("--generate-password", "generate a password even on a terminal")
  .action(async (name: string, o: { role: string; generatePassword?: boolean }) => {
    const password = o.generatePassword || !process.stdin.isTTY ? undefined : await promptNewPassword();
    await withDatabase(async () => {
      const r = await createUser({ username: name, role: o.role as never, password }, cliPrincipal());
      console.error(`created ${r.user.role} ${r.user.username}.`);
      if (r.generated) {
        console.error("Its password is shown once; store it now:");
        console.log(r.password);
      }
    });
  });

user
  .command("list")
  .description("list console users")
  .option("--json", "print JSON")
  .action(async (o: { json?: boolean }) => {
    await withDatabase(async () => {
      const rows = await listUsers();
      if (o.json) return console.log(JSON.stringify(rows, null, 2));
      if (rows.length === 0) return console.log("no users yet: keyward user create <name> --role admin");
      printTable(
        rows.map((u) => ({
          USERNAME: u.username,
          ROLE: u.role,
          STATUS: u.disabled ? "disabled" : "active",
          "SIGN-IN": u.sso ? "sso" : "password",
          CREATED: iso(u.createdAt),
          "LAST SEEN": iso(u.lastSeenAt),
        })),
      );
    });
  });

for (const [verb, disabled] of [["disable", true], ["enable", false]] as const) {
  user
    .command(`${verb} <name>`)
    .description(disabled ? "disable a user: their sessions end at once and they cannot sign in" : "enable a disabled user")
    .action(async (name: string) => {
      await withDatabase(async () => {
        const u = await updateUser(name, { disabled }, cliPrincipal());
        console.log(`${u.username} is ${u.disabled ? "disabled" : "enabled"}`);
      });
    });
}

user
  .command("set-role <name> <role>")
  .description(`change a user's role (${ROLES.join(", ")}); their sessions end`)
  .action(async (name: string, role: string) => {
    await withDatabase(async () => {
      const u = await updateUser(name, { role }, cliPrincipal());
      console.log(`${u.username} is now ${u.role}`);
    });
  });

user
  .command("reset-password <name>")
  .description("set a new password (prompted on a terminal, else generated and printed once); sessions end")
  .option("--generate-password", "generate a password even on a terminal")
  .action(async (name: string, o: { generatePassword?: boolean }) => {
    const password = o.generatePassword || !process.stdin.isTTY ? undefined : await promptNewPassword();
    await withDatabase(async () => {
      const r = await resetPassword(name, cliPrincipal(), password);
      console.error(`reset the password of ${name}.`);
      if (r.generated) {
        console.error("The new password is shown once; store it now:");
        console.log(r.password);
      }
    });
  });

const replay = program.command("replay").description("dead-letter replays: progress and control (start them in the console or the API)");

replay
  .command("list")
  .description("replays, newest first")
  .option("--source <name>", "only this source's")
  .option("--status <status>", "running, paused, cancelled or completed")
  .option("--limit <n>", "at most this many (1-200)", "50")
  .option("--json", "print JSON")
  .action(async (o: { source?: string; status?: string; limit: string; json?: boolean }) => {
    await withDatabase(async () => {
      const { items } = await listReplays({ source: o.source, status: o.status, limit: o.limit });
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
          HEALTH: r.health.state,
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
      const r = await getReplay(id);
      if (o.json) return console.log(JSON.stringify(r, null, 2));
      const done = r.total - r.counts.pending - r.counts.delivering;
      console.log(`replay ${r.id} of ${r.source}: ${r.status}, ${done}/${r.total} settled`);
      console.log(
        `  delivered ${r.counts.delivered}, failed ${r.counts.failed}, skipped_unsafe ${r.counts.skipped_unsafe}, ` +
          `cancelled ${r.counts.cancelled}, pending ${r.counts.pending}, delivering ${r.counts.delivering}`,
      );
      console.log(`  include ${r.include.join(", ")}; ${r.ratePerSecond}/s, concurrency ${r.concurrency}; by ${r.createdBy} at ${r.createdAt}`);
      if (r.destination) console.log(`  ${r.status === "completed" || r.status === "cancelled" ? "sent" : "sending"} to ${r.destination}`);
      console.log(`  health ${r.health.state}${r.health.reason ? `: ${r.health.reason}` : ""}`);
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
    await withDatabase(async () => {
      const pf = await retryFailed(id, cliPrincipal());
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
        const r = await changeReplay(id, action, cliPrincipal());
        console.log(`replay ${r.id}: ${r.status}`);
      });
    });
}

program
  .command("prune")
  .description("delete expired dedup keys now: one bounded run in batches (the server also prunes on its own schedule)")
  .option("--batch-size <n>", "keys per batch (default KEYWARD_PRUNE_BATCH_SIZE, 5000)", wholeNumber)
  .option("--budget <duration>", "start no batch after this long, e.g. 30s, 2m, 500ms (default KEYWARD_PRUNE_BUDGET_MS, 30s)", milliseconds)
  .option("--pause <ms>", "pause between batches in ms (default KEYWARD_PRUNE_PAUSE_MS, 50)", wholeNumber)
  .option("--json", "print the run as JSON")
  .action(async (o: { batchSize?: number; budget?: number; pause?: number; json?: boolean }) => {
    const options = parseOrThrow(pruneRequest, { batchSize: o.batchSize, budgetMs: o.budget, pauseMs: o.pause });
    await withDatabase(async () => {
      const outcome = await pruneNow(cliPrincipal(), "cli", options);
      if (o.json) return console.log(JSON.stringify(outcome, null, 2));
      if ("skipped" in outcome) return console.log(`skipped: ${outcome.skipped}`);
      const { run } = outcome;
      const seconds = ((run.durationMs ?? 0) / 1000).toFixed(2);
      console.log(
        `pruned ${run.rows} expired keys in ${run.batches} batch${run.batches === 1 ? "" : "es"}, ${seconds} s, ` +
          `${(run.rowsPerSecond ?? 0).toLocaleString("en-US")} keys/s (run ${run.id}, stopped: ${run.stopped})`,
      );
    });
  });

const partitions = program
  .command("partitions")
  .description("partition mode of the dedup table: daily partitions by expiry, expired days dropped whole");

partitions
  .command("enable")
  .description("convert the dedup table to partition mode (one transaction; claims wait while the rows are copied)")
  .action(async () => {
    await withDatabase(async () => {
      const r = await enablePartitionMode(cliPrincipal());
      console.log(
        `partition mode enabled: ${r.partitions} partitions created (and a DEFAULT one), ${r.rowsMoved} keys moved, ` +
          `${(r.durationMs / 1000).toFixed(2)} s`,
      );
    });
  });

partitions
  .command("disable")
  .description("convert the dedup table back to one table with a unique key (one transaction)")
  .action(async () => {
    await withDatabase(async () => {
      const r = await disablePartitionMode(cliPrincipal());
      console.log(
        `single-table mode restored: ${r.partitions} partitions merged, ${r.rowsMoved} keys moved, ${(r.durationMs / 1000).toFixed(2)} s`,
      );
    });
  });

partitions
  .command("status")
  .description("the dedup table's mode, and its partitions with their ranges and estimated rows")
  .option("--json", "print as JSON")
  .action(async (o: { json?: boolean }) => {
    await withDatabase(async () => {
      const s = await partitionStatus();
      if (o.json) return console.log(JSON.stringify(s, null, 2));
      console.log(`mode: ${s.mode}${s.mode === "single" ? " (one table; `keyward partitions enable` switches)" : ""}`);
      printTable(
        s.partitions.map((p) => ({
          partition: p.name,
          from: p.rangeStart ?? "DEFAULT",
          to: p.rangeEnd ?? "",
          "est. rows": String(p.estimatedRows),
        })),
      );
    });
  });

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`"${value}" is not a whole number`);
  return Number(value);
}

/** "500ms", or a duration in s/m/h/d ("30s", "2m"), as milliseconds. */
function milliseconds(value: string): number {
  const ms = /^(\d+)ms$/.exec(value.trim());
  return ms ? Number(ms[1]) : duration(value) * 1000;
}

/** Asks twice without echo; an empty answer means "generate one". */
async function promptNewPassword(): Promise<string | undefined> {
  const first = await promptHidden("Password (at least 12 characters; empty to generate one): ");
  if (first === "") return undefined;
  const second = await promptHidden("Repeat the password: ");
  if (first !== second) throw new Error("the passwords differ");
  return first;
}

function promptHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding("utf8");
    let answer = "";
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") {
          done();
          return resolve(answer);
        }
        if (ch === "\u0003") {
          done();
          return reject(new Error("cancelled"));
        }
        if (ch === "\u007f" || ch === "\b") answer = answer.slice(0, -1);
        else answer += ch;
      }
    };
    const done = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    stdin.on("data", onData);
  });
}

program.parseAsync(process.argv).catch((err: unknown) => {
  const message = err instanceof KeywardError || err instanceof Error ? err.message : String(err);
  console.error(`keyward: ${message}`);
  process.exitCode = 1;
});
