/** Waiting on an inlet consumer's own signal, for the inlet tests of every broker. */
import { sql } from "./db";
import { eventually } from "./rabbitmq";

/**
 * Resolves once the inlet reports its lag after this call (the consumer's periodic job, every pollMs). After a
 * pause, it says the consumer kept working through it, so "nothing more was taken" means something.
 */
export async function reportsAgain(inletId: string): Promise<void> {
  const [{ at }] = await sql<{ at: string }>("SELECT clock_timestamp()::text AS at");
  await eventually(async () => {
    const [i] = await sql<{ later: boolean }>("SELECT lag_checked_at > $2::timestamptz AS later FROM inlets WHERE id = $1", [inletId, at]);
    return i?.later ? true : undefined;
  }, "a lag report after the pause");
}
