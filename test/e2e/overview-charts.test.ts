/**
 * The Overview's charts in a real headless Chromium: the real server on this run's database, metric
 * samples and prune runs written here with distinctive values at recent minutes, read back off the
 * rendered charts (lines and bars drawn, tooltips showing those values), with no browser console error
 * (CSP violations included).
 */
import type { BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../setup/db";
import { signedInContext } from "../setup/browser";
import { useConsoleServer } from "../setup/e2e";

const e2e = useConsoleServer();
let context: BrowserContext | undefined;

// Minutes back from now that this file writes: the chart's right end, which other servers' samplers
// (writing only the current minute) never touch again.
const SAMPLE_MINUTES = [12, 11, 10, 9, 8, 7, 6, 5, 4, 3];
const RUN_MINUTES = [10, 7, 4];

beforeAll(async () => {
  context = await signedInContext(e2e.browser, e2e.baseUrl);

  // Upserts: another test's server may have sampled these minutes while it ran.
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
  await card.scrollIntoViewIfNeeded();
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
    // A drawn line is a path through points (M x,y L x,y …), not an empty one.
    for (const card of [size, backlog]) {
      expect(await card.locator(".recharts-line-curve").first().getAttribute("d")).toMatch(/^M[\d.]+,[\d.]+L/);
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
    await page.getByRole("link", { name: "7d" }).click();
    await page.waitForURL(/range=7d/);
    await page.getByText("one point per 15 min").waitFor();
    await backlog.locator(".recharts-line-curve").first().waitFor({ state: "attached" });
    expect(await cleanup.locator(".recharts-bar-rectangle").count()).toBeGreaterThanOrEqual(1);

    expect(errors).toEqual([]);
  }, 120_000);
});
