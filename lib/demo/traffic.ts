/**
 * The demo's live traffic (`keyward demo` only, KEYWARD_DEMO=1): while the demo runs, its three simulated
 * senders keep delivering, so the Overview and the charts move and a TTL change shows in them. Every
 * 15 s each sender delivers a new event about one time in three (≈1.3 a minute, the seeded history's
 * rate) and redelivers one of its recent events about one time in six (a duplicate of a live key), through
 * the same claim path a service uses, as the sender's API key. Bounded: at most two claims per sender per
 * pass; the recent ids are kept in memory (the last 50 per sender).
 */
import "server-only";
import { randomBytes, randomUUID } from "node:crypto";
import { claimEvents } from "@/lib/claims/claim";
import { batchClaimRequest } from "@/lib/claims/schema";
import type { Job } from "@/lib/jobs/registry";
import { parseInput } from "@/lib/http/validate";
import { DEMO_SOURCES, type DemoSource } from "./simulate";

export const DEMO_TRAFFIC_EVERY_MS = 15_000;
const RECENT = 50;

/** A new event id in the sender's own style: Stripe's evt_…, GitHub's delivery UUIDs, the shop's ord_…. */
function newEventId(source: DemoSource): string {
  const tail = randomBytes(6).toString("base64url");
  if (source.name === "stripe") return `evt_1Q${tail}`;
  if (source.name === "orders") return `ord_${tail.slice(0, 4)}_${tail.slice(4)}`;
  return randomUUID();
}

/** One pass: the deliveries of each sender. `rand` is injectable for tests. */
export async function deliverDemoTraffic(recent: Map<string, { eventId: string; eventType: string }[]>, rand = Math.random): Promise<number> {
  let delivered = 0;
  for (const source of DEMO_SOURCES) {
    const mine = recent.get(source.name) ?? [];
    const events: { eventId: string; eventType: string }[] = [];
    if (rand() < 1 / 3) {
      const e = { eventId: newEventId(source), eventType: source.eventTypes[Math.floor(rand() * source.eventTypes.length)] };
      events.push(e);
      mine.push(e);
    }
    if (mine.length > 1 && rand() < 1 / 6) events.push(mine[Math.floor(rand() * (mine.length - 1))]);
    recent.set(source.name, mine.slice(-RECENT));
    if (events.length === 0) continue;
    await claimEvents(parseInput(batchClaimRequest, { source: source.name, events }), { actor: source.actor });
    delivered += events.length;
  }
  return delivered;
}

/** The periodic job (lib/jobs/registry.ts), added by `keyward start` when it serves the demo. */
export function demoTrafficJob(): Job {
  const recent = new Map<string, { eventId: string; eventType: string }[]>();
  return {
    name: "demo-traffic",
    everyMs: DEMO_TRAFFIC_EVERY_MS,
    run: async () => {
      await deliverDemoTraffic(recent);
    },
  };
}
