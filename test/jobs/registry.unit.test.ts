/** The jobs registry (lib/jobs/registry.ts), on real timers with short intervals. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { startJobs, type Job, type Jobs } from "@/lib/jobs/registry";
import { startHeartbeat } from "@/lib/jobs/heartbeat";
import { timePasses } from "@/test/setup/time";

const started: Jobs[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((j) => j.stop()));
});
function start(jobs: Job[], log: (msg: string) => void = () => {}): Jobs {
  const j = startJobs(jobs, log);
  started.push(j);
  return j;
}
/** Resolves when `signal` is aborted (at once if it is). */
const aborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true })));

/**
 * A job that records each pass and how many of its passes were running at once. Each pass lasts `passMs`,
 * or, with `passMs` "gated", until the test calls `endPass()`.
 */
function counted(name: string, everyMs: number, passMs: number | "gated") {
  const seen = { passes: 0, running: 0, maxRunning: 0 };
  const ends: (() => void)[] = [];
  const job: Job = {
    name,
    everyMs,
    async run() {
      seen.running++;
      seen.maxRunning = Math.max(seen.maxRunning, seen.running);
      if (passMs === "gated") await new Promise<void>((resolve) => ends.push(resolve));
      else await timePasses(passMs, "a pass that takes time: one outlasting its interval is what overlap would need");
      seen.running--;
      seen.passes++;
    },
  };
  const endPass = () => {
    expect(ends.length, "a pass is waiting to end").toBeGreaterThan(0);
    ends.shift()!();
  };
  return { job, seen, endPass };
}

describe("startJobs", () => {
  it("runs a job again and again, never overlapping itself even when a pass outlasts the interval", async () => {
    const { job, seen } = counted("slow", 2, 25);
    start([job]);
    await vi.waitFor(() => expect(seen.passes).toBeGreaterThanOrEqual(4), { timeout: 5000, interval: 10 });
    expect(seen.maxRunning).toBe(1);
  });

  it("runs each job on its own: a job stuck in a pass does not hold back another", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let stuckPasses = 0;
    const stuck: Job = {
      name: "stuck",
      everyMs: 5,
      async run() {
        stuckPasses++;
        await gate;
      },
    };
    const fast = counted("fast", 5, 1);
    start([stuck, fast.job]);
    await vi.waitFor(() => expect(fast.seen.passes).toBeGreaterThanOrEqual(5), { timeout: 5000, interval: 10 });
    expect(stuckPasses).toBe(1); // still in its first pass, not started again
    release();
  });

  it("wake(name) runs an idle job's pass at once, and a busy job's right after its pass, never two at a time", async () => {
    const { job, seen, endPass } = counted("hourly", 3_600_000, "gated");
    const jobs = start([job]);
    jobs.wake("hourly");
    await vi.waitFor(() => expect(seen.running).toBe(1), { timeout: 5000, interval: 5 });
    endPass();
    await vi.waitFor(() => expect(seen.passes).toBe(1), { timeout: 5000, interval: 5 });
    jobs.wake("hourly");
    await vi.waitFor(() => expect(seen.running).toBe(1), { timeout: 5000, interval: 5 });
    jobs.wake("hourly"); // during the pass: once more after it
    endPass();
    await vi.waitFor(() => expect({ passes: seen.passes, running: seen.running }).toEqual({ passes: 2, running: 1 }), { timeout: 5000, interval: 5 });
    endPass();
    await vi.waitFor(() => expect(seen.passes).toBe(3), { timeout: 5000, interval: 5 });
    expect(seen.maxRunning).toBe(1);
    jobs.wake("no such job"); // ignored
    await jobs.stop();
    jobs.wake("hourly"); // after stop: nothing
    await timePasses(30, "a wake arms a 0 ms timer: had it armed one after stop, its pass would have run by now");
    expect(seen.passes).toBe(3);
  });

  it("logs a failing pass with the job's name and runs the job again", async () => {
    const log: string[] = [];
    let calls = 0;
    start(
      [
        {
          name: "flaky",
          everyMs: 5,
          async run() {
            calls++;
            if (calls === 1) throw new Error("database unavailable");
          },
        },
      ],
      (m) => log.push(m),
    );
    await vi.waitFor(() => expect(calls).toBeGreaterThanOrEqual(3), { timeout: 5000, interval: 10 });
    expect(log).toEqual(["flaky failed (will retry in 0.005 s): database unavailable"]);
  });

  it("stop() aborts the running pass's signal, waits for the pass to end, and runs nothing after", async () => {
    let passes = 0;
    let inPass: (() => void) | undefined;
    const entered = new Promise<void>((r) => (inPass = r));
    let finishedAfterAbort = false;
    let signalSeen: AbortSignal | undefined;
    const jobs = start([
      {
        name: "batches",
        everyMs: 5,
        async run(signal) {
          passes++;
          signalSeen = signal;
          inPass?.();
          // Work until told to stop, then finish the batch in hand, which outlasts the abort.
          await aborted(signal);
          await timePasses(20, "the batch in hand still takes time after the abort: stop() must wait for it");
          finishedAfterAbort = true;
        },
      },
    ]);
    await entered;
    expect(jobs.running()).toBeInstanceOf(Promise);
    await jobs.stop();
    expect(signalSeen?.aborted).toBe(true);
    expect(finishedAfterAbort).toBe(true);
    expect(jobs.running()).toBeUndefined();
    await timePasses(50, "several 5 ms intervals: a stopped registry arms nothing");
    expect(passes).toBe(1);
    await jobs.stop(); // idempotent
  });

  it("stop() between passes cancels the next one", async () => {
    const { job, seen } = counted("idle", 40, 1);
    const jobs = start([job]);
    await jobs.stop();
    await timePasses(100, "past the 40 ms interval: the cancelled pass never runs");
    expect(seen.passes).toBe(0);
  });

  it("treats everyMs 0 as off, and times passes by nextDelayMs when a job gives it", async () => {
    const off = counted("off", 0, 1);
    const delays: number[] = [];
    const aimed = counted("aimed", 60_000, 1);
    aimed.job.nextDelayMs = () => {
      delays.push(1);
      return 5;
    };
    start([off.job, aimed.job]);
    await vi.waitFor(() => expect(aimed.seen.passes).toBeGreaterThanOrEqual(2), { timeout: 5000, interval: 10 });
    expect(delays.length).toBeGreaterThanOrEqual(2);
    expect(off.seen.passes).toBe(0);
  });

  it("refuses two jobs of one name", () => {
    const { job } = counted("twice", 10, 1);
    expect(() => startJobs([job, { ...job }], () => {})).toThrow(/two jobs named "twice"/);
  });

  it("runs a runAtStart job's first pass at once, the others' after their first delay", async () => {
    const eager = counted("eager", 60_000, 1);
    eager.job.runAtStart = true;
    const patient = counted("patient", 60_000, 1);
    start([eager.job, patient.job]);
    await vi.waitFor(() => expect(eager.seen.passes).toBe(1), { timeout: 5000, interval: 10 });
    expect(patient.seen.passes).toBe(0);
  });

  it("stop() lets go of what each job holds once its passes have ended, once, and logs a failed stop", async () => {
    const order: string[] = [];
    const logged: string[] = [];
    let inPass: (() => void) | undefined;
    const entered = new Promise<void>((r) => (inPass = r));
    const jobs = start(
      [
        {
          name: "holder",
          everyMs: 5,
          async run(signal) {
            inPass?.();
            await aborted(signal);
            order.push("pass ended");
          },
          async stop() {
            order.push("stopped");
          },
        },
        {
          name: "clumsy",
          everyMs: 60_000,
          run: async () => {},
          stop: async () => {
            throw new Error("could not let go");
          },
        },
        { name: "off", everyMs: 0, run: async () => {}, stop: async () => void order.push("off stopped") },
      ],
      (m) => logged.push(m),
    );
    await entered;
    await Promise.all([jobs.stop(), jobs.stop()]);
    await jobs.stop();
    expect(order).toEqual(["pass ended", "stopped"]);
    expect(logged).toEqual(["clumsy: stopping failed: could not let go"]);
  });
});

describe("startHeartbeat", () => {
  it("beats every interval, never two beats at once, survives a failing beat, and stop() waits for the beat in progress", async () => {
    let beats = 0;
    let running = 0;
    let maxRunning = 0;
    let ended = 0;
    const hb = startHeartbeat(5, async () => {
      beats++;
      running++;
      maxRunning = Math.max(maxRunning, running);
      await timePasses(20, "a beat outlasting its 5 ms interval: the ticks meanwhile must be skipped");
      running--;
      ended++;
      if (beats === 1) throw new Error("a failed beat");
    });
    await vi.waitFor(() => expect(beats).toBeGreaterThanOrEqual(3), { timeout: 5000, interval: 5 });
    await hb.stop();
    expect(maxRunning).toBe(1);
    expect(ended).toBe(beats);
    const after = beats;
    await timePasses(40, "several 5 ms intervals: a stopped heartbeat beats no more");
    expect(beats).toBe(after);
  });

  it("beats at once with `now`", async () => {
    let beats = 0;
    const hb = startHeartbeat(60_000, async () => void beats++, { now: true });
    await vi.waitFor(() => expect(beats).toBe(1), { timeout: 1000, interval: 5 });
    await hb.stop();
  });
});
