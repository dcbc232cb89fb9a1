/**
 * `keyward inlet add|list|remove`: RabbitMQ queues whose messages become a source's dead letters
 * (docs/inlets.md). Opens the same database as every
 * other command. The AMQP URL is stored encrypted and printed only with its password masked.
 */
import { readFileSync } from "node:fs";
import { InvalidArgumentError, type Command } from "commander";
import { cliPrincipal } from "../../auth/principal";
import { parseInput } from "../../http/validate";
import { createInlet, listInlets, removeInlet } from "../../inlets/inlets";
import { createInletRequest, DEFAULT_EVENT_ID_FROM, DEFAULT_PREFETCH, parseEventIdFrom, type Inlet } from "../../inlets/schema";
import { printTable, wholeNumber, withDatabase } from "../io";

function eventIdFrom(value: string): string {
  const r = parseEventIdFrom(value);
  if (!r.ok) throw new InvalidArgumentError(r.error);
  return value;
}

/** One line per inlet: where it reads, how, and how it is doing. */
function describeInlet(i: Inlet): Record<string, string> {
  const lag =
    i.lag.messages === null ? "-" : `${i.lag.messages} msg${i.lag.lastMessageAgeSeconds === null ? "" : `, last ${i.lag.lastMessageAgeSeconds.toFixed(1)} s old`}`;
  return {
    ID: i.id,
    SOURCE: i.source,
    QUEUE: i.queue,
    URL: i.url,
    "EVENT ID FROM": i.eventIdFrom,
    STATE: i.state === "error" && i.lastError ? `error: ${i.lastError}` : i.state,
    LAG: lag,
    CONSUMED: String(i.consumed),
  };
}

export function registerInlet(program: Command): void {
  const inlet = program.command("inlet").description("RabbitMQ queues whose messages become a source's dead letters");

  inlet
    .command("add <source>")
    .description("consume a RabbitMQ queue (e.g. the one bound to your dead-letter exchange) into the source's dead letters")
    .option("--amqp-url <url>", "amqp[s]://user:password@host:5672/vhost (stored encrypted; or --amqp-url-file, or KEYWARD_INLET_AMQP_URL)")
    .option("--amqp-url-file <path>", "read the URL from this file (keeps the password off the command line)")
    .requiredOption("--queue <name>", "the queue to consume")
    .option("--event-id-from <where>", "header:<name> | property:message_id | property:correlation_id | json:<path>", eventIdFrom, DEFAULT_EVENT_ID_FROM)
    .option("--prefetch <n>", "messages held unacknowledged at once (1–1000)", wholeNumber, DEFAULT_PREFETCH)
    .option("--no-check", "save without connecting first (the consumer reports problems on the inlet)")
    .action(async (source: string, o: { amqpUrl?: string; amqpUrlFile?: string; queue: string; eventIdFrom: string; prefetch: number; check: boolean }) => {
      const amqpUrl = o.amqpUrl ?? (o.amqpUrlFile ? readFileSync(o.amqpUrlFile, "utf8").trim() : process.env.KEYWARD_INLET_AMQP_URL);
      if (!amqpUrl) throw new Error("give the broker's URL: --amqp-url, --amqp-url-file or KEYWARD_INLET_AMQP_URL");
      await withDatabase(async () => {
        const request = parseInput(createInletRequest, { amqpUrl, queue: o.queue, eventIdFrom: o.eventIdFrom, prefetch: o.prefetch, check: o.check });
        const i = await createInlet(source, request, cliPrincipal());
        console.log(`added inlet ${i.id}: ${i.queue} at ${i.url} → dead letters of ${i.source} (event id from ${i.eventIdFrom}, prefetch ${i.prefetch})`);
        console.log("running servers start consuming it within a few seconds (KEYWARD_INLET_POLL_MS)");
      });
    });

  inlet
    .command("list")
    .description("inlets with their state and lag (URLs with the password masked)")
    .option("--source <name>", "only this source's")
    .option("--json", "print JSON")
    .action(async (o: { source?: string; json?: boolean }) => {
      await withDatabase(async () => {
        const inlets = await listInlets(o.source);
        if (o.json) return console.log(JSON.stringify(inlets, null, 2));
        if (inlets.length === 0) return console.log("no inlets (add one: keyward inlet add <source> --amqp-url … --queue …)");
        printTable(inlets.map(describeInlet));
      });
    });

  inlet
    .command("remove <id>")
    .description("stop consuming the inlet's queue (its dead letters stay)")
    .action(async (id: string) => {
      await withDatabase(async () => {
        const { removed } = await removeInlet(id, cliPrincipal());
        console.log(`removed inlet ${removed.id} (${removed.queue} at ${removed.url}); servers stop consuming it within a few seconds`);
      });
    });
}
