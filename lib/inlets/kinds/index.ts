/** The inlet kinds by name, and how their URLs are shown (the password masked). */
import type { InletKind } from "@/lib/inlets/schema";
import { amqpKind } from "./amqp";
import { bullmqKind } from "./bullmq";
import { natsKind } from "./nats";
import type { InletKindImpl } from "./link";

const KINDS: Record<InletKind, InletKindImpl> = { amqp: amqpKind, bullmq: bullmqKind, nats: natsKind };

export function inletKind(kind: InletKind): InletKindImpl {
  return KINDS[kind];
}

export { maskServiceUrl } from "@/lib/inlets/service-url";
