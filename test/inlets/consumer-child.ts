/**
 * A process that only consumes inlets (the server's job, without Next), for the test that kills the
 * consumer mid-stream (kill.system.test.ts): `tsx consumer-child.ts <inlet id>…`, DATABASE_URL from the
 * environment. Prints every consumer log line; runs until killed (SIGTERM: a clean stop).
 */
import { startInletConsumers } from "@/lib/inlets/consumers";

const ids = process.argv.slice(2);
if (ids.length === 0) throw new Error("usage: consumer-child.ts <inlet id>…");
const consumers = startInletConsumers({ only: ids, pollMs: 200, log: (m) => console.log(m) });
const alive = setInterval(() => {}, 60_000);
// SIGTERM stops as the server does (the batch in hand stored and acknowledged); SIGKILL is the crash.
process.once("SIGTERM", () => {
  void consumers.stop().finally(() => {
    clearInterval(alive);
    process.exit(0);
  });
});
