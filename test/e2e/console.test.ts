/**
 * The console in a real headless Chromium (Debian's package; .ci/run installs it): the real server on
 * this run's database, figures created through the library, read back off the rendered Overview.
 */
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimEvent } from "../../lib/claims/claim";
import { flushClaimCounts } from "../../lib/metrics/claim-counts";
import { makeSource, uniq } from "../setup/db";
import { launchChromium, signedInContext } from "../setup/browser";
import { baseEnv, freePort, startKeyward, stopServer, type Server } from "../setup/server";

let server: Server | undefined;
let browser: Browser | undefined;
let context: BrowserContext | undefined;
let baseUrl: string;
const spawned: Server[] = [];

beforeAll(async () => {
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  server = await startKeyward(
    Object.assign(baseEnv(), { DATABASE_URL: process.env.DATABASE_URL, PORT: String(port), HOSTNAME: "127.0.0.1" }),
    spawned,
  );
  browser = await launchChromium();
  // The console's API answers signed-in users only.
  context = await signedInContext(browser, baseUrl);
}, 660_000);

afterAll(async () => {
  await browser?.close();
  for (const s of spawned) await stopServer(s);
}, 30_000);

describe("the console in Chromium", () => {
  it("shows a source's live keys, claims and duplicates on the Overview, with no browser errors", async () => {
    const source = await makeSource(3 * 86400, uniq("ui"));
    for (let i = 0; i < 7; i++) await claimEvent({ source, eventId: `evt_${i % 5}`, eventType: "charge" });
    await claimEvent({ source, eventId: "leased", eventType: "charge", leaseSeconds: 600 });
    await flushClaimCounts();

    const page = await context!.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    await page.goto(baseUrl + "/");

    const row = page.locator("tr", { hasText: source });
    await row.waitFor({ timeout: 20_000 });
    const cells = (await row.locator("td").allInnerTexts()).map((t) => t.trim());
    // The source heads the row; then alive, in flight, lease lapsed, expired, claims, duplicates, …
    expect(await row.innerText()).toContain(source);
    expect(cells.slice(0, 6)).toEqual(["6", "1", "0", "0", "6", "2"]);
    expect(await page.getByRole("link", { name: "Sources" }).count()).toBe(1);
    expect(errors).toEqual([]);
  });
});
