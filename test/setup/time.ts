/**
 * The one way a test lets time pass on purpose. A test waits for an event (a row, an audit entry, a log line, a
 * counter: `expect.poll`, `vi.waitFor`, a promise the code under test resolves), never for a guess at how long
 * the event takes; on a loaded machine every guess is eventually wrong. Where time itself is what is tested (a
 * lease must lapse, an age must pass a bound, nothing may happen during a pause), `timePasses` says so, and
 * `why` names the bound. test/conventions.unit.test.ts refuses any other sleep in a test file.
 */
export function timePasses(ms: number, why: string): Promise<void> {
  if (!why) throw new Error("timePasses: say why time itself is what is tested");
  return new Promise((resolve) => setTimeout(resolve, ms));
}
