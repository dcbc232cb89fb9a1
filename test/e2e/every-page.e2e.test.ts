/**
 * Every console page at 1440×900 and 390×844 (issue 23 "Finish"), in a real headless
 * Chromium against the real server on a database of its own seeded with the demo's history (the same data
 * `npm run screenshots` shows): the page never scrolls sideways (wide tables scroll inside their card), at
 * 1440 no table is cut off by its card, and every control's accessible name contains its visible label
 * (WCAG 2.5.3). The pages and the checks are test/setup/console-pages.ts. No browser errors on any page.
 * The dark scheme is visited at the phone's width only: a scheme changes colours, not layout (the custom
 * properties test checks that every light colour token has a dark value), so a third pass finds browser
 * errors a dark page would throw without doubling the visits. `npm run screenshots` still takes all four.
 * Takes about two minutes: the seed (~30 s) and 39 page visits.
 */
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureAuditPartitions } from "@/lib/audit/partitions";
import { seedDemo } from "@/lib/demo/seed";
import { deliverDemoTraffic } from "@/lib/demo/traffic";
import { sql, fileDatabaseUrl } from "@/test/setup/db";
import { launchChromium } from "@/test/setup/browser";
import { SCHEMES, VIEWPORTS, consolePages, contextAt, layoutProblems, openSettled, signInContext, type ConsolePage } from "@/test/setup/console-pages";
import { baseEnv, reservePort, startKeyward, stopServer, type Server } from "@/test/setup/server";

let browser: Browser | undefined;
let baseUrl = "";
let pages: ConsolePage[] = [];
const spawned: Server[] = [];
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  await ensureAuditPartitions();
  await seedDemo();
  const port = await reservePort();
  baseUrl = `http://127.0.0.1:${port}`;
  await startKeyward(Object.assign(baseEnv(), { DATABASE_URL: fileDatabaseUrl(), PORT: String(port), HOSTNAME: "127.0.0.1", KEYWARD_TRUST_PROXY: "true" }), spawned);
  browser = await launchChromium();
  const context = await browser.newContext();
  contexts.push(context);
  await signInContext(context, baseUrl);
  pages = await consolePages(context, baseUrl);
}, 660_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  for (const s of spawned) await stopServer(s);
}, 30_000);

describe("every console page", () => {
  for (const viewport of VIEWPORTS) {
    for (const scheme of SCHEMES.filter((s) => s === "light" || viewport.width < 600)) {
      it(`fits ${viewport.width}×${viewport.height} (${scheme}) without sideways scrolling, cut-off tables or misleading names`, async () => {
        const signedIn = await contextAt(browser!, viewport, scheme);
        const anonymous = await contextAt(browser!, viewport, scheme);
        contexts.push(signedIn, anonymous);
        await signInContext(signedIn, baseUrl);
        const found: string[] = [];
        for (const p of pages) {
          const page = await (p.signedIn ? signedIn : anonymous).newPage();
          const errors: string[] = [];
          page.on("pageerror", (e) => errors.push(String(e)));
          page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
          await openSettled(page, baseUrl + p.path);
          for (const problem of await layoutProblems(page, viewport)) found.push(`${p.name} (${p.path}): ${problem}`);
          for (const e of errors) found.push(`${p.name} (${p.path}): browser error ${e}`);
          await page.close();
        }
        expect(found).toEqual([]);
      }, 240_000);
    }
  }
});

describe("global search", () => {
  it("opens with / or Cmd-K on any page and finds a replay by its first 8 characters, an event by its id", async () => {
    const context = await contextAt(browser!, VIEWPORTS[0], "light");
    contexts.push(context);
    await signInContext(context, baseUrl);
    const page = await context.newPage();
    const replay = pages.find((p) => p.name === "replay-detail")!.path.split("/").pop()!;
    const event = decodeURIComponent(pages.find((p) => p.name === "event")!.path.split("/").pop()!);

    await openSettled(page, `${baseUrl}/`);
    await page.keyboard.press("/");
    const box = page.getByRole("dialog", { name: "Search" });
    await box.getByRole("searchbox", { name: "Search" }).fill(replay.slice(0, 8));
    await box.getByRole("link", { name: new RegExp(replay) }).waitFor();
    await page.keyboard.press("Enter");
    await page.waitForURL(`${baseUrl}/replays/${replay}`);

    // The Audit page puts the cursor in its event id field: "/" types there, Cmd-K still searches.
    await openSettled(page, `${baseUrl}/audit`);
    await page.keyboard.press("ControlOrMeta+k");
    await box.getByRole("searchbox", { name: "Search" }).fill(event);
    const hit = box.getByRole("link", { name: new RegExp(`^${event}`) }).first();
    await hit.waitFor();
    expect(await hit.getAttribute("href")).toBe(`/events/orders/${encodeURIComponent(event)}`);
    await hit.click();
    await page.waitForURL(`${baseUrl}/events/orders/${encodeURIComponent(event)}`);
    await expect.poll(() => box.isVisible()).toBe(false);
  }, 60_000);
});

describe("keyward demo's live traffic", () => {
  it("keeps its three senders delivering: new events claimed as the sender's key, recent ones redelivered as duplicates", async () => {
    const recent = new Map<string, { eventId: string; eventType: string }[]>();
    expect(await deliverDemoTraffic(recent, () => 0)).toBe(3); // each sender: one new event
    expect(await deliverDemoTraffic(recent, () => 0)).toBe(6); // each: one new, and a redelivery of the first
    for (const source of ["stripe", "github", "orders"]) {
      const [first, second] = recent.get(source)!;
      const rows = await sql<{ event_id: string; status: string; duplicate_count: number }>(
        "SELECT event_id, status, duplicate_count FROM dedup_keys WHERE source = $1 AND event_id = ANY($2) ORDER BY duplicate_count DESC",
        [source, [first.eventId, second.eventId]],
      );
      expect(rows).toEqual([
        { event_id: first.eventId, status: "done", duplicate_count: 1 },
        { event_id: second.eventId, status: "done", duplicate_count: 0 },
      ]);
    }
  });
});

