/**
 * The Overview's charts in a real headless Chromium: the real server on a database of this file's own
 * (the shared one holds every other file's sources, samples and runs by then, and its Overview's page grew
 * heavy enough to stall the test's clicks on a loaded machine), metric samples and prune runs written here
 * with distinctive values at recent minutes, read back off the rendered charts (lines and bars drawn,
 * tooltips showing those values), with no browser console error (CSP violations included). And the
 * per-source table beside them when the database holds more sources than it shows.
 */
import type { BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { sql, uniq } from "@/test/setup/db";
import { signedInContext } from "@/test/setup/browser";
import { useConsoleServer } from "@/test/setup/e2e";

const e2e = useConsoleServer();
let context: BrowserContext | undefined;

// Minutes back from now that this file writes: the chart's right end, which the server's sampler (writing
// only the current minute) never touches again.
const SAMPLE_MINUTES = [12, 11, 10, 9, 8, 7, 6, 5, 4, 3];
const RUN_MINUTES = [10, 7, 4];

beforeAll(async () => {
  context = await signedInContext(e2e.browser, e2e.baseUrl);

  // Upserts: the server's sampler may have sampled one of these minutes as it started.
  await sql(
    `INSERT INTO metric_samples (at, table_bytes, index_bytes, estimated_rows, alive_keys, expiry_backlog, backlog_capped,
                                 in_flight, claims, duplicates, per_source)
     SELECT date_trunc('minute', now()) - make_interval(mins => m), 7777777777, 1111111111, 8888888, 8464646, 424242, false,
            17, 3131, 1717, NULL
     FROM unnest($1::int[]) AS m
     ON CONFLICT (at) DO UPDATE SET table_bytes = excluded.table_bytes, index_bytes = excluded.index_bytes,
       estimated_rows = excluded.estimated_rows, alive_keys = excluded.alive_keys, expiry_backlog = excluded.expiry_backlog,
       backlog_capped = excluded.backlog_capped, in_flight = excluded.in_flight, claims = excluded.claims,
       duplicates = excluded.duplicates`,
    [SAMPLE_MINUTES],
  );
  // 313,131 keys in 10 s each: 31.3k keys per second.
  await sql(
    `INSERT INTO prune_runs (started_at, finished_at, mode, trigger, batches, rows, stopped)
     SELECT date_trunc('minute', now()) - make_interval(mins => m) + interval '5 seconds',
            date_trunc('minute', now()) - make_interval(mins => m) + interval '15 seconds', 'batch', 'external', 63, 313131, 'drained'
     FROM unnest($1::int[]) AS m`,
    [RUN_MINUTES],
  );
}, 660_000);

afterAll(async () => {
  await context?.close();
});

function chart(page: Page, title: string): Locator {
  return page.locator(`section[data-chart="${title}"]`);
}

/**
 * Moves the pointer leftwards across the right part of a chart's plot until its tooltip shows `text`;
 * returns the tooltip's text. The samples written here are the last 3 to 12 minutes of the hour shown.
 */
async function hoverUntil(page: Page, card: Locator, text: string): Promise<string> {
  const plot = card.locator(".recharts-cartesian-grid");
  await plot.waitFor();
  // Not scrollIntoViewIfNeeded: it waits for the card to stand still, and a refetch may redraw it meanwhile.
  await card.evaluate((el) => el.scrollIntoView({ block: "center" }));
  const box = (await plot.boundingBox())!;
  const tooltip = card.getByTestId("chart-tooltip");
  let seen = "";
  for (let x = box.x + box.width - 1; x > box.x + box.width * 0.7; x -= 4) {
    await page.mouse.move(x, box.y + box.height / 2);
    if (await tooltip.count()) {
      seen = await tooltip.innerText();
      if (seen.includes(text)) return seen;
    }
  }
  throw new Error(`no tooltip showed ${text}; last seen: ${seen}`);
}

describe("the Overview's charts in Chromium", () => {
  it("draws table size, expiry backlog and cleanup throughput from the stored samples and runs", async () => {
    const page = await context!.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    await page.goto(`${e2e.baseUrl}/?range=1h`);

    const size = chart(page, "Dedup table size");
    const backlog = chart(page, "Expiry backlog");
    const cleanup = chart(page, "Cleanup throughput");
    // Charts are drawn once the history has loaded and the container has measured its width.
    await size.locator(".recharts-line-curve").first().waitFor({ state: "attached", timeout: 30_000 });
    expect(await size.locator(".recharts-line").count()).toBe(4);
    expect(await backlog.locator(".recharts-line").count()).toBe(1);
    await cleanup.locator(".recharts-bar-rectangle").first().waitFor({ state: "attached" });
    expect(await cleanup.locator(".recharts-bar-rectangle").count()).toBeGreaterThanOrEqual(RUN_MINUTES.length);
    // A drawn line is a path through points (M x,y L x,y …), not an empty one. Buckets without samples are
    // gaps (no line drawn across missing data), so a lone bucket between gaps is a point (M x,y Z) beside them.
    for (const card of [size, backlog]) {
      expect(await card.locator(".recharts-line-curve").first().getAttribute("d")).toMatch(/M[\d.]+,[\d.]+L[\d.]+,[\d.]+/);
    }

    const sizeTip = await hoverUntil(page, size, "7.24 GiB");
    expect(sizeTip).toContain("8.89M");
    expect(sizeTip).toContain("1.03 GiB");
    expect(await hoverUntil(page, backlog, "424,242")).toContain("Expired, not pruned");
    const runTip = await hoverUntil(page, cleanup, "31.3k/s");
    expect(runTip).toContain("313k");
    expect(runTip).toContain("63 batches");
    expect(await chart(page, "Claims and duplicates per 1 min").locator(".recharts-line").count()).toBe(2);

    // Another range: bucketed server-side, the same charts.
    await page.getByRole("link", { name: "7d", exact: true }).click();
    await page.waitForURL(/range=7d/);
    // lib/metrics/step.ts: 7 d at ≤ 180 points. A new page render and a new read: slow on a loaded machine.
    await page.getByText("one point per 1 h").waitFor({ timeout: 60_000 });
    await backlog.locator(".recharts-line-curve").first().waitFor({ state: "attached" });
    expect(await cleanup.locator(".recharts-bar-rectangle").count()).toBeGreaterThanOrEqual(1);

    expect(errors).toEqual([]);
  }, 120_000);
});

describe("the Overview's per-source table with more sources than it shows", () => {
  it("shows the 50 busiest first, says how many it leaves out, shows all on request, and filters by name", async () => {
    const prefix = uniq("many");
    await sql(
      `INSERT INTO sources (name, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds)
       SELECT $1 || '-' || lpad(g::text, 2, '0'), 86400, 0, 0, 0, 86400 FROM generate_series(1, 60) g`,
      [prefix],
    );
    // The busiest: 40 deliveries in the last hour, then 3; the others none.
    for (let i = 0; i < 40; i++) await claimEvent({ source: `${prefix}-57`, eventId: `e${i % 20}`, eventType: "t" });
    for (let i = 0; i < 3; i++) await claimEvent({ source: `${prefix}-33`, eventId: `e${i}`, eventType: "t" });
    await flushClaimCounts();
    const page = await context!.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    // What the console asks the server for: the 10 s refresh carries the 50 busiest rows, not every source's.
    const reads: { url: URL; rows: number; matching: number }[] = [];
    page.on("response", async (res) => {
      const url = new URL(res.url());
      if (url.pathname !== "/api/v1/overview" || res.status() !== 200) return;
      const body = (await res.json().catch(() => null)) as { sources: unknown[]; sourcesMatching: number } | null;
      if (body) reads.push({ url, rows: body.sources.length, matching: body.sourcesMatching });
    });
    await page.goto(`${e2e.baseUrl}/`);
    const table = page.getByRole("table", { name: "Keys and claim outcomes per source" });
    const rows = table.locator("tbody tr");
    const note = page.getByTestId("source-rows-note");
    await note.waitFor();
    expect(await note.innerText()).toMatch(/^The 50 busiest of \d+ sources \(deliveries in the last hour, then alive keys\)$/);
    expect(await rows.count()).toBe(50);
    expect(await rows.nth(0).locator("th").innerText()).toContain(`${prefix}-57`);
    expect(await rows.nth(1).locator("th").innerText()).toContain(`${prefix}-33`);

    // The charts' picker still offers a source the table leaves out (-60: quiet, last by name).
    expect(await rows.filter({ hasText: `${prefix}-60` }).count()).toBe(0);
    const picker = page.getByRole("combobox", { name: "Source shown in the charts" });
    await picker.fill(`${prefix}-60`);
    await page.getByRole("option", { name: `${prefix}-60`, exact: true }).waitFor();
    await picker.press("Escape");

    const total = Number((await note.innerText()).match(/of (\d+) sources/)![1]);
    expect(total).toBeGreaterThanOrEqual(60);
    expect(reads.length).toBeGreaterThanOrEqual(1);
    for (const r of reads) expect([r.url.searchParams.get("limit"), r.url.searchParams.has("q"), r.rows, r.matching]).toEqual(["50", false, 50, total]);
    await page.getByRole("button", { name: `Show all ${total}` }).click();
    await expect.poll(() => rows.count()).toBe(total);
    // The test records a read once it has read the body itself, which on a loaded machine can lag the page's render.
    await expect.poll(() => reads.find((r) => !r.url.searchParams.has("limit") && !r.url.searchParams.has("q"))).toMatchObject({ rows: total, matching: total });
    await page.getByRole("button", { name: "Show the 50 busiest" }).click();
    await expect.poll(() => rows.count()).toBe(50);

    await page.getByLabel("Filter sources by name").fill(`${prefix.toUpperCase()}-0`);
    await expect.poll(() => rows.count()).toBe(9); // -01 … -09, by name
    // The filter is the server's: asked for those rows (the 50 busiest of them, here all 9).
    await expect.poll(() => reads.filter((r) => r.url.searchParams.has("q") && r.rows === 9).length).toBeGreaterThanOrEqual(1);
    const filtered = reads.filter((r) => r.url.searchParams.has("q"));
    for (const r of filtered) expect([r.url.searchParams.get("q"), r.url.searchParams.get("limit"), r.rows, r.matching]).toEqual([`${prefix.toUpperCase()}-0`, "50", 9, 9]);
    expect(await rows.nth(0).locator("th").innerText()).toContain(`${prefix}-01`);
    expect(await note.innerText()).toBe(`9 of ${total} sources, by name`);
    await page.getByLabel("Filter sources by name").fill("no-such-source");
    await page.getByText("No source name contains “no-such-source”.").waitFor();
    expect(errors).toEqual([]);

    // A filtered read that fails (the database unreachable) says so, and the busiest rows stay.
    const failing = await context!.newPage();
    failing.on("pageerror", (e) => errors.push(String(e)));
    await failing.route("**/api/v1/overview?*q=*", (route) =>
      route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { code: "database_unavailable", message: "The database is unreachable" } }) }),
    );
    await failing.goto(`${e2e.baseUrl}/`);
    await failing.getByTestId("source-rows-note").waitFor();
    await failing.getByLabel("Filter sources by name").fill(`${prefix}-0`);
    const alert = failing.getByRole("alert").filter({ hasText: "These sources could not be loaded" });
    await alert.waitFor({ timeout: 30_000 });
    expect(await alert.innerText()).toBe("These sources could not be loaded (The database is unreachable); the busiest are shown. Retried every 10 s.");
    const failingRows = failing.getByRole("table", { name: "Keys and claim outcomes per source" }).locator("tbody tr");
    expect(await failingRows.count()).toBe(50);
    expect(await failingRows.nth(0).locator("th").innerText()).toContain(`${prefix}-57`);
    expect(await failing.getByTestId("source-rows-note").innerText()).toMatch(/^The 50 busiest of \d+ sources \(/);
    expect(errors).toEqual([]);
  }, 120_000);
});

describe("the charts' source picker with more sources than it lists", () => {
  // expect.poll's default is 1 s; the names' read took longer in a CI run on the loaded 2-core machine.
  const WAIT = { timeout: 20_000 };

  it("finds a source by part of its name in any case, picks it by keyboard, puts the choice back when left, and clears it", async () => {
    const prefix = uniq("pick");
    await sql(
      `INSERT INTO sources (name, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds)
       SELECT $1 || '-alpha-' || lpad(g::text, 2, '0'), 86400, 0, 0, 0, 86400 FROM generate_series(1, 70) g
       UNION ALL SELECT $1 || '-zeta-special', 86400, 0, 0, 0, 86400`,
      [prefix],
    );
    const [{ n: total }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM sources");
    const page = await context!.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    await page.goto(`${e2e.baseUrl}/?range=1h`);
    const picker = page.getByRole("combobox", { name: "Source shown in the charts" });
    const options = page.getByRole("listbox", { name: "Sources" }).getByRole("option");
    const note = page.getByRole("region", { name: "Trends" }).getByRole("status");

    // Opened empty: "All sources" (the current choice) and the first 50 names, and how many more there are.
    await picker.click();
    await expect.poll(() => note.innerText(), WAIT).toBe(`${total - 50} more sources: type part of a name to find one.`);
    expect(await options.count()).toBe(51);
    expect(await options.first().innerText()).toBe("All sources");
    expect(await options.first().getAttribute("aria-selected")).toBe("true");

    // Part of a name, in another case: that source alone; Enter picks it, and the charts show it.
    await picker.fill("ZETA-SPEC");
    await expect.poll(() => options.allInnerTexts(), WAIT).toEqual([`${prefix}-zeta-special`]);
    await picker.press("Enter");
    await page.waitForURL(new RegExp(`[?&]source=${prefix}-zeta-special`));
    await expect.poll(() => page.getByRole("region", { name: "Trends" }).innerText(), { timeout: 20_000 }).toContain(`Showing ${prefix}-zeta-special`);
    expect(await picker.inputValue()).toBe(`${prefix}-zeta-special`);
    expect(new URL(page.url()).searchParams.get("range")).toBe("1h");

    // Typed, then left with Tab: nothing is picked, and the field reads the choice again.
    await picker.fill(`${prefix}-alpha-0`);
    await expect.poll(() => options.count(), WAIT).toBe(9);
    await picker.press("Tab");
    await expect.poll(() => picker.inputValue(), WAIT).toBe(`${prefix}-zeta-special`);
    expect(new URL(page.url()).searchParams.get("source")).toBe(`${prefix}-zeta-special`);

    // Arrow keys move through the matches; 21 of them, 50 at most shown: all 21.
    await picker.fill(`${prefix}-ALPHA-`);
    await expect.poll(() => options.count(), WAIT).toBe(50);
    expect(await note.innerText()).toBe("20 more match: type part of a name to find one.");
    await picker.press("ArrowDown");
    await picker.press("ArrowDown");
    await picker.press("Enter");
    await page.waitForURL(new RegExp(`[?&]source=${prefix}-alpha-03`));
    // The charts follow (the page re-renders with the new choice) before the next keystroke.
    await expect.poll(() => page.getByRole("region", { name: "Trends" }).innerText(), { timeout: 20_000 }).toContain(`Showing ${prefix}-alpha-03`);

    // Nothing matches: said so; Escape puts the choice back.
    await picker.fill("no-such-source-at-all");
    await expect.poll(() => note.innerText(), WAIT).toBe("No source name contains “no-such-source-at-all”.");
    expect(await options.count()).toBe(0);
    await picker.press("Escape");
    await expect.poll(() => picker.inputValue(), WAIT).toBe(`${prefix}-alpha-03`);

    // The clear button goes back to every source.
    await page.getByRole("button", { name: "Show all sources" }).click();
    await page.waitForURL((url) => !url.searchParams.has("source"));
    await expect.poll(() => picker.inputValue(), WAIT).toBe("");
    expect(await picker.getAttribute("placeholder")).toBe("All sources");

    // At phone width the open list stays on the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await picker.fill("zeta");
    await options.first().waitFor();
    const box = (await page.getByRole("listbox", { name: "Sources" }).boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(390);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(errors).toEqual([]);

    // Every name unreadable (the database unreachable): the busiest are offered, and the list says they are not all.
    const failing = await context!.newPage();
    failing.on("pageerror", (e) => errors.push(String(e)));
    await failing.route("**/api/v1/source-names", (route) =>
      route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { code: "database_unavailable", message: "The database is unreachable" } }) }),
    );
    await failing.goto(`${e2e.baseUrl}/?range=1h`);
    await failing.getByTestId("source-rows-note").waitFor();
    const failingPicker = failing.getByRole("combobox", { name: "Source shown in the charts" });
    await failingPicker.click();
    const failingNote = failing.getByRole("region", { name: "Trends" }).getByRole("status");
    // Retried twice (react-query, ~3 s) before the read counts as failed; meanwhile the list says it is loading.
    await expect.poll(() => failingNote.innerText(), { timeout: 20_000 }).toBe(
      "Only the 50 busiest are listed: the other names could not be loaded (The database is unreachable). Retried every minute.",
    );
    expect(await failing.getByRole("listbox", { name: "Sources" }).getByRole("option").count()).toBe(51);
    expect(errors).toEqual([]);
  }, 120_000);
});
