/**
 * Issue 23's remaining console features in a real headless Chromium against the real server:
 * - the replays list filtered by outcome or state (the select above the list, GET /api/v1/replays?outcome|state);
 * - the wizard's retry schedule: presets or typed fields, refused as the server refuses them, a warning when
 *   the keys' remaining life bounds it, and the schedule the replay started with on its page and in the API;
 * - a chart value between two gaps in its own series is drawn as a dot (a line needs two points).
 */
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { rotateSigningSecret } from "@/lib/sources/signing-secret";
import { createSourceRequest } from "@/lib/sources/schema";
import { createSource, updateSource } from "@/lib/sources/sources";
import { call } from "@/test/setup/auth";
import { sql, uniq } from "@/test/setup/db";
import { useConsoleServer } from "@/test/setup/e2e";
import { makeApiKey } from "@/test/setup/http";

const BROWSER_TEST_MS = 150_000;
const e2e = useConsoleServer();
const goto = (page: Page, path: string) => page.goto(e2e.baseUrl + path);

/** With KEYWARD_SHOTS_DIR set, saves the page at 1440×900 and 390×844, light and dark; otherwise nothing. */
async function shoot(page: Page, name: string) {
  const dir = process.env.KEYWARD_SHOTS_DIR;
  if (!dir) return;
  const size = page.viewportSize();
  for (const [w, h] of [[1440, 900], [390, 844]] as const) {
    for (const scheme of ["light", "dark"] as const) {
      await page.setViewportSize({ width: w, height: h });
      await page.emulateMedia({ colorScheme: scheme });
      await page.waitForTimeout(150);
      await page.screenshot({ path: `${dir}/${name}-${w}-${scheme}.png`, fullPage: true });
    }
  }
  await page.emulateMedia({ colorScheme: null });
  if (size) await page.setViewportSize(size);
}

/** A source ready to replay (a destination that is never called here, a signing secret) with `n` letters; `claimed` of them processed first (alive keys). */
async function seed(n: number, claimed = 0) {
  const source = uniq("rc");
  await createSource(parseInput(createSourceRequest, { name: source, preset: "stripe" }), cliPrincipal());
  await updateSource(source, { replayDestination: "http://127.0.0.1:9/never" }, cliPrincipal());
  await rotateSigningSecret(source, cliPrincipal());
  const events = Array.from({ length: n }, () => uniq("evt"));
  const claimKey = (await makeApiKey(["claims:write"])).key;
  for (const eventId of events.slice(0, claimed)) {
    const c = await call(e2e.baseUrl, "POST", "/api/v1/claims", { key: claimKey, body: { source, eventId, eventType: "order.paid" } });
    expect(c.status).toBe(201);
  }
  if (n === 0) return source;
  const items = events.map((eventId) => ({ source, eventId, eventType: "order.paid", payload: { id: eventId }, error: "handler timeout", attempts: 5 }));
  const res = await call(e2e.baseUrl, "POST", "/api/v1/dead-letters/batch", { key: (await makeApiKey(["deadletters:write"])).key, body: { items } });
  expect(res.status).toBe(200);
  return source;
}

/** A replay of every pending letter of `source` through the API (no worker runs here), then given its status and item outcomes by hand. */
async function replayEnded(source: string, status: string, outcomes: string[]): Promise<string> {
  const key = (await makeApiKey(["operator"])).key;
  const pf = await call(e2e.baseUrl, "POST", "/api/v1/replays/preflight", { key, body: { source } });
  expect(pf.status).toBe(201);
  const started = await call(e2e.baseUrl, "POST", "/api/v1/replays", {
    key,
    headers: { "idempotency-key": uniq("idem") },
    body: { preflightId: pf.body.preflightId, include: ["never_processed"] },
  });
  expect(started.status).toBe(202);
  const id = started.body.replayId as string;
  // The status first: a worker of another file's server (same database) leaves a finished or paused replay alone.
  await sql(`UPDATE replays SET status = $2, finished_at = CASE WHEN $2 IN ('completed', 'cancelled') THEN now() END WHERE id = $1`, [id, status]);
  await sql(
    `UPDATE replay_items i SET outcome = ($2::text[])[o.n] FROM (SELECT dead_letter_id, row_number() OVER (ORDER BY seq) AS n FROM replay_items WHERE replay_id = $1) o
     WHERE i.replay_id = $1 AND i.dead_letter_id = o.dead_letter_id`,
    [id, outcomes],
  );
  return id;
}

describe("the replay console's remaining features in Chromium", () => {
  it("filters the replays list by outcome and by state", async () => {
    const failedSource = await seed(2);
    const okSource = await seed(1);
    const runningSource = await seed(1);
    await replayEnded(failedSource, "completed", ["failed", "failed"]);
    await replayEnded(okSource, "completed", ["delivered"]);
    // Paused, not running: another file's server may run a replay worker on this shared database, and it would drive a running one.
    await replayEnded(runningSource, "paused", ["pending"]);

    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "viewer", "Replay");
    const table = page.getByRole("table", { name: "Replays, newest first" });
    const rowOf = (source: string) => table.getByRole("row").filter({ hasText: source });
    await rowOf(failedSource).waitFor();
    const filter = page.getByLabel("Outcome", { exact: true });
    expect(await filter.inputValue()).toBe("");

    await filter.selectOption("failed");
    await rowOf(failedSource).waitFor();
    await rowOf(okSource).waitFor({ state: "detached" });
    // Every row listed ended so: the filter and the badge are one decision.
    const outcomes = await table.locator("[data-replay-outcome]").evaluateAll((els) => els.map((e) => e.getAttribute("data-replay-outcome")));
    expect(outcomes.length).toBeGreaterThan(0);
    expect(new Set(outcomes)).toEqual(new Set(["failed"]));
    expect(await rowOf(runningSource).count()).toBe(0);
    await shoot(page, "replays-filtered");

    await filter.selectOption("succeeded");
    await rowOf(okSource).waitFor();
    expect(await rowOf(failedSource).count()).toBe(0);

    await filter.selectOption("running");
    await rowOf(runningSource).waitFor();
    expect(await table.locator("[data-replay-outcome]").count()).toBe(0);
    expect(await rowOf(okSource).count()).toBe(0);

    await filter.selectOption("");
    await rowOf(failedSource).waitFor();
    await rowOf(okSource).waitFor();

    // A filter nothing matches: the filtered empty state (a search icon, not the empty tray) and a
    // "Clear filter" that puts every replay back. The shared database may hold a cancelled replay of
    // another file, so that one answer of the list is made empty here; what renders it is what is tested.
    await page.route(/\/api\/v1\/replays\?outcome=cancelled$/, (r) => r.fulfill({ json: { items: [], next: null } }));
    await filter.selectOption("cancelled");
    await page.getByRole("heading", { name: "No cancelled replay" }).waitFor();
    expect(await page.locator("[data-icon]", { hasText: "No cancelled replay" }).getAttribute("data-icon")).toBe("SearchX");
    await page.getByRole("button", { name: "Clear filter" }).click();
    await rowOf(failedSource).waitFor();
    expect(await filter.inputValue()).toBe("");
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("the wizard's retry schedule: a preset or typed values, refused as the server refuses them, bounded by the keys' life, shown on the replay", async () => {
    const source = await seed(3, 2);
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "operator");
    await goto(page, `/replay?source=${source}`);
    await page.getByRole("button", { name: `Replay pending dead letters of ${source}…` }).click();
    const w = page.getByRole("region", { name: "Replay wizard" });
    await w.getByRole("button", { name: "Run preflight" }).click();
    await w.getByRole("button", { name: "Next: confirm" }).click();
    const retries = w.getByRole("group", { name: "Retries" });
    await retries.waitFor();
    // The default is the deployment's, named.
    expect(await retries.getByRole("radio", { name: /^Default/ }).isChecked()).toBe(true);
    expect(await retries.innerText()).toMatch(/Default — up to \d+ attempts, waits from/);

    // A schedule of weeks outlives the alive keys (the stripe preset's TTL): the wizard says the keys bound it.
    await retries.getByRole("radio", { name: /^Custom/ }).check();
    await w.getByLabel("Attempts", { exact: true }).fill("100");
    await w.getByLabel("First wait (seconds)").fill("60");
    await w.getByLabel("Longest wait (seconds)").fill("86400");
    const bound = w.getByTestId("retry-key-bound");
    await bound.waitFor();
    expect(await bound.innerText()).toMatch(/2 included events' keys expire before this schedule's last retry/);
    await w.getByLabel("Type the number of events to confirm").fill("3");
    await shoot(page, "wizard-retry-bound");

    // Refused as the server refuses it: no Start.
    await w.getByLabel("Attempts", { exact: true }).fill("0");
    await w.getByText("Attempts must be a whole number from 1 to 100.").first().waitFor();
    expect(await w.getByRole("button", { name: "Start replay of 3 events" }).isDisabled()).toBe(true);
    await w.getByLabel("Longest wait (seconds)").fill("30");
    await w.getByLabel("Attempts", { exact: true }).fill("3");
    await w.getByText("The longest wait must not be shorter than the first.").first().waitFor();
    // The server answers 422 for the same values.
    const key = (await makeApiKey(["operator"])).key;
    const pf = await call(e2e.baseUrl, "POST", "/api/v1/replays/preflight", { key, body: { source } });
    const refused = await call(e2e.baseUrl, "POST", "/api/v1/replays", {
      key,
      headers: { "idempotency-key": uniq("idem") },
      body: { preflightId: pf.body.preflightId, include: ["never_processed"], retry: { maxAttempts: 0 } },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.details.fields.map((f: { field: string }) => f.field)).toContain("retry.maxAttempts");

    // A short schedule: no bound, and the replay starts with it.
    await w.getByLabel("First wait (seconds)").fill("1");
    await w.getByLabel("Longest wait (seconds)").fill("2");
    await bound.waitFor({ state: "detached" });
    expect(await w.getByTestId("retry-span").innerText()).toContain("retried for up to 3 s in all");
    await w.getByRole("button", { name: "Start replay of 3 events" }).click();
    await w.getByRole("progressbar", { name: "Replay progress" }).waitFor();
    const [replay] = await sql<{ id: string; retry_max_attempts: number; retry_initial_ms: number; retry_max_delay_ms: number }>(
      "SELECT id, retry_max_attempts, retry_initial_ms, retry_max_delay_ms FROM replays WHERE source = $1",
      [source],
    );
    expect(replay).toMatchObject({ retry_max_attempts: 3, retry_initial_ms: 1000, retry_max_delay_ms: 2000 });
    await goto(page, `/replays/${replay.id}`);
    expect(await page.getByTestId("retry-schedule").innerText()).toBe("up to 3 attempts, waits from 1s doubling to 2s (jittered)");
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("draws a dot for a value between gaps in its series (a line needs two points), and a line where it has neighbours", async () => {
    const source = await seed(0);
    // Per-source samples in the 30-day range (4-hour buckets): one alone 26 days back, two in neighbouring buckets 10 days back.
    const at = (daysBack: number, hours: number) => `date_trunc('hour', now()) - interval '${daysBack} days' + interval '${hours} hours 17 minutes'`;
    for (const [when, alive] of [[at(26, 0), 1000], [at(10, 0), 1200], [at(10, 4), 1300]] as const) {
      const entry = { aliveKeys: alive, expiryBacklog: 42, inFlight: 0, claims: 5, duplicates: 1 };
      await sql(
        `INSERT INTO metric_samples (at, table_bytes, index_bytes, estimated_rows, alive_keys, expiry_backlog, backlog_capped, in_flight, claims, duplicates, per_source)
         VALUES (${when}, 9000000, 1000000, 20000, 10000, 0, false, 0, 0, 0, jsonb_build_object($1::text, $2::jsonb))
         ON CONFLICT (at) DO UPDATE SET per_source = coalesce(metric_samples.per_source, '{}'::jsonb) || excluded.per_source`,
        [source, JSON.stringify(entry)],
      );
    }
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "viewer");
    await goto(page, `/sources/${source}?range=30d`);
    const backlog = page.locator('section[data-chart="Expiry backlog"]');
    await backlog.locator("svg.recharts-surface").first().waitFor({ state: "attached", timeout: 30_000 });
    const dots = backlog.locator('[data-lone-point="expiryBacklog"]');
    await dots.first().waitFor({ state: "attached" });
    // Where the dots are, as a share of the plot's width (the server's sampler adds its own lone sample at the right end).
    const sharesOf = async (card: typeof backlog, l: typeof dots) => {
      const grid = await card.locator(".recharts-cartesian-grid").boundingBox();
      return Promise.all((await l.all()).map(async (d) => {
        const b = (await d.boundingBox())!;
        expect(b.width > 0 && b.height > 0).toBe(true);
        return (b.x + b.width / 2 - grid!.x) / grid!.width;
      }));
    };
    const shares = await sharesOf(backlog, dots);
    // A dot for the lone sample 26 days back (about 13 % in), none for the pair 10 days back (about 67 %): a line there.
    expect(shares.filter((x) => x > 0.08 && x < 0.2)).toHaveLength(1);
    expect(shares.filter((x) => x > 0.55 && x < 0.8)).toHaveLength(0);
    expect(await backlog.locator(".recharts-line-curve").first().getAttribute("d")).toMatch(/M[\d.]+,[\d.]+L[\d.]+,[\d.]+/);
    const sizes = page.locator('section[data-chart="Alive keys and estimated bytes"]');
    for (const key of ["aliveKeys", "tableBytes"]) {
      const lone = await sharesOf(sizes, sizes.locator(`[data-lone-point="${key}"]`));
      expect(lone.filter((x) => x > 0.08 && x < 0.2), key).toHaveLength(1);
      expect(lone.filter((x) => x > 0.55 && x < 0.8), key).toHaveLength(0);
    }
    await shoot(page, "source-lone-point");
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);
});
