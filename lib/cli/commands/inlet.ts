/**
 * `keyward inlet add|list|remove`: where a source's dead letters come from (docs/inlets.md): a RabbitMQ
 * queue (--amqp-url, --queue), a BullMQ queue's failed jobs (--redis-url, --bullmq-queue), a NATS
 * JetStream consumer's exhausted messages (--nats-url, --nats-stream, --nats-consumer). Opens the same
 * database as every other command. The broker's URL is stored encrypted and printed only with its
 * password masked.
 */
import { readFileSync } from "node:fs";
import { InvalidArgumentError, type Command } from "commander";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { createInlet, listInlets, removeInlet } from "@/lib/inlets/inlets";
import { createInletRequest, DEFAULT_PREFETCH, INLET_KINDS, inletParams, parseEventIdFrom, type Inlet } from "@/lib/inlets/schema";
import { printTable, wholeNumber, withDatabase } from "@/lib/cli/io";

/** A form some kind accepts (the request's schema then checks it against the inlet's kind). */
function eventIdFrom(value: string): string {
  if (INLET_KINDS.some((k) => parseEventIdFrom(value, k).ok)) return value;
  const r = parseEventIdFrom(value);
  throw new InvalidArgumentError(r.ok ? "not valid for this kind of inlet" : r.error);
}

/** A URL from the flag, the file flag, or the environment variable. */
function urlFrom(value: string | undefined, file: string | undefined, env: string): string | undefined {
  return value ?? (file ? readFileSync(file, "utf8").trim() : process.env[env]);
}

/** One line per inlet: where it reads, how, and how it is doing. */
function describeInlet(i: Inlet): Record<string, string> {
  const lag =
    i.lag.messages === null ? "-" : `${i.lag.messages} msg${i.lag.lastMessageAgeSeconds === null ? "" : `, last ${i.lag.lastMessageAgeSeconds.toFixed(1)} s old`}`;
  return {
    ID: i.id,
    SOURCE: i.source,
    KIND: i.kind,
    QUEUE: i.queue,
    URL: i.url,
    "EVENT ID FROM": i.eventIdFrom,
    STATE: i.state === "error" && i.lastError ? `error: ${i.lastError}` : i.state,
    LAG: lag,
    CONSUMED: String(i.consumed),
  };
}

export function registerInlet(program: Command): void {
  const inlet = program.command("inlet").description("where a source's dead letters come from: RabbitMQ queues, BullMQ failed jobs, NATS JetStream");

  type AddOptions = {
    amqpUrl?: string;
    amqpUrlFile?: string;
    queue?: string;
    redisUrl?: string;
    redisUrlFile?: string;
    bullmqQueue?: string;
    bullmqPrefix?: string;
    natsUrl?: string;
    natsUrlFile?: string;
    natsStream?: string;
    natsConsumer?: string;
    natsAdvisoryStream?: string;
    eventIdFrom?: string;
    prefetch: number;
    check: boolean;
  };

  inlet
    .command("add <source>")
    .description("consume a RabbitMQ queue, a BullMQ queue's failed jobs or a NATS JetStream consumer's exhausted messages into the source's dead letters")
    .option("--amqp-url <url>", "RabbitMQ: amqp[s]://user:password@host:5672/vhost (stored encrypted; or --amqp-url-file, or KEYWARD_INLET_AMQP_URL)")
    .option("--amqp-url-file <path>", "read the URL from this file (keeps the password off the command line)")
    .option("--queue <name>", "RabbitMQ: the queue to consume")
    .option("--redis-url <url>", "BullMQ: redis[s]://[user:password@]host:6379[/db] (or --redis-url-file, or KEYWARD_INLET_REDIS_URL)")
    .option("--redis-url-file <path>", "read the Redis URL from this file")
    .option("--bullmq-queue <name>", "BullMQ: the queue whose failed jobs are taken")
    .option("--bullmq-prefix <prefix>", "BullMQ: the queue's key prefix (default bull)")
    .option("--nats-url <url>", "NATS: nats://[user:password@]host:4222 (or --nats-url-file, or KEYWARD_INLET_NATS_URL)")
    .option("--nats-url-file <path>", "read the NATS URL from this file")
    .option("--nats-stream <name>", "NATS: the stream")
    .option("--nats-consumer <name>", "NATS: the consumer whose exhausted messages (MAX_DELIVERIES) are taken")
    .option("--nats-advisory-stream <name>", "NATS: the stream the advisories are kept in (default KEYWARD_DLQ_<stream>_<consumer>, created)")
    .option(
      "--event-id-from <where>",
      "header:<name> | property:message_id | property:correlation_id | property:job_id | json:<path> (default: property:message_id, property:job_id, header:Nats-Msg-Id by kind)",
      eventIdFrom,
    )
    .option("--prefetch <n>", "messages held unacknowledged at once (1–1000)", wholeNumber, DEFAULT_PREFETCH)
    .option("--no-check", "save without connecting first (the consumer reports problems on the inlet)")
    .action(async (source: string, o: AddOptions) => {
      const common = { ...(o.eventIdFrom ? { eventIdFrom: o.eventIdFrom } : {}), prefetch: o.prefetch, check: o.check };
      let body: Record<string, unknown>;
      if (o.bullmqQueue !== undefined || o.redisUrl !== undefined || o.redisUrlFile !== undefined) {
        const redisUrl = urlFrom(o.redisUrl, o.redisUrlFile, "KEYWARD_INLET_REDIS_URL");
        if (!redisUrl) throw new Error("give Redis's URL: --redis-url, --redis-url-file or KEYWARD_INLET_REDIS_URL");
        if (!o.bullmqQueue) throw new Error("give the BullMQ queue: --bullmq-queue <name>");
        body = { kind: "bullmq", redisUrl, queue: o.bullmqQueue, ...(o.bullmqPrefix ? { prefix: o.bullmqPrefix } : {}), ...common };
      } else if (o.natsStream !== undefined || o.natsUrl !== undefined || o.natsUrlFile !== undefined) {
        const natsUrl = urlFrom(o.natsUrl, o.natsUrlFile, "KEYWARD_INLET_NATS_URL");
        if (!natsUrl) throw new Error("give the NATS URL: --nats-url, --nats-url-file or KEYWARD_INLET_NATS_URL");
        if (!o.natsStream || !o.natsConsumer) throw new Error("give the stream and the consumer: --nats-stream <name> --nats-consumer <name>");
        body = {
          kind: "nats",
          natsUrl,
          stream: o.natsStream,
          consumer: o.natsConsumer,
          ...(o.natsAdvisoryStream ? { advisoryStream: o.natsAdvisoryStream } : {}),
          ...common,
        };
      } else {
        const amqpUrl = urlFrom(o.amqpUrl, o.amqpUrlFile, "KEYWARD_INLET_AMQP_URL");
        if (!amqpUrl) throw new Error("give the broker's URL: --amqp-url, --amqp-url-file or KEYWARD_INLET_AMQP_URL (or --redis-url for BullMQ, --nats-url for NATS)");
        if (!o.queue) throw new Error("give the queue to consume: --queue <name>");
        body = { amqpUrl, queue: o.queue, ...common };
      }
      await withDatabase(async () => {
        const request = parseInput(createInletRequest, body);
        const i = await createInlet(source, request, cliPrincipal());
        console.log(`added ${i.kind} inlet ${i.id}: ${i.queue} at ${i.url} → dead letters of ${i.source} (event id from ${i.eventIdFrom}, prefetch ${i.prefetch})`);
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
        if (inlets.length === 0) return console.log("no inlets (add one: keyward inlet add <source> --amqp-url … --queue …, or --redis-url … --bullmq-queue …, or --nats-url … --nats-stream … --nats-consumer …)");
        printTable(inlets.map(describeInlet));
      });
    });

  inlet
    .command("remove <id>")
    .description("stop consuming the inlet (its dead letters stay)")
    .action(async (id: string) => {
      await withDatabase(async () => {
        const { removed } = await removeInlet(parseInput(inletParams, { id }).id, cliPrincipal());
        console.log(`removed inlet ${removed.id} (${removed.queue} at ${removed.url}); servers stop consuming it within a few seconds`);
      });
    });
}
