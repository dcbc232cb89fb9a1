/**
 * The Audit screens in a real headless Chromium, against the real server: claims made through the HTTP
 * API, searched by a viewer; the event page's answer and timeline; an event whose key was pruned (1 s TTL,
 * the real pruner) still explains as processed, expired and pruned. In a database of its own: the pruner
 * deletes every expired key, and other files keep expired keys on purpose. No page may report a browser
 * error (a CSP violation is one).
 */
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import type { Role } from "@/lib/auth/roles";
import { pruneExpiredKeys } from "@/lib/retention/prune";
import { call } from "@/test/setup/auth";
import { makeSource, sql, uniq, untilDatabaseClockPasses } from "@/test/setup/db";
import { useConsoleServer } from "@/test/setup/e2e";
import { makeApiKey } from "@/test/setup/http";
import type { Json } from "@/test/setup/json";

const BROWSER_TEST_MS = 60_000;

const e2e = useConsoleServer();
let claimKey: string;

beforeAll(async () => {
  claimKey = (await makeApiKey(["claims:write"])).key;
});

async function claim(source: string, eventId: string, eventType = "invoice.paid"): Promise<Json> {
  const res = await call(e2e.baseUrl, "POST", "/api/v1/claims", { key: claimKey, body: { source, eventId, eventType } });
  if (res.status !== 200 && res.status !== 201) throw new Error(`claim failed: ${res.status} ${res.text}`);
  return res.body;
}

/** A viewer (or `role`) signs in on the sign-in page and opens the Audit screen from the navigation. */
async function viewerOnAudit(role: Role = "viewer"): Promise<{ page: Page; errors: string[] }> {
  const opened = await e2e.openPage();
  await e2e.signInAs(opened.page, role, "Audit");
  return opened;
}

describe("the Audit screens in Chromium", () => {
  it(
    "a viewer pastes an event id with its source and gets the answer and the timeline; a source search pages and links to events",
    async () => {
      const source = await makeSource(7 * 86400);
      const eventId = `ord/${uniq("42")} x`; // a slash and a space survive the URL
      const claimed = await claim(source, eventId);
      await claim(source, eventId); // a duplicate
      for (let i = 0; i < 3; i++) await claim(source, uniq("other"), "charge.failed");

      const { page, errors } = await viewerOnAudit();
      await page.getByLabel("Event id", { exact: true }).fill(eventId);
      await page.getByLabel("Source", { exact: true }).selectOption(source);
      await page.getByRole("form", { name: "Search the audit history" }).getByRole("button", { name: "Search", exact: true }).click();
      await page.waitForURL(`${e2e.baseUrl}/events/${encodeURIComponent(source)}/${encodeURIComponent(eventId)}`);
      await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe(eventId);
      const answer = page.getByRole("region", { name: "Answer" });
      await answer.getByText(/Processed at .*; key alive until /).waitFor();
      expect(await answer.textContent()).toContain("Key alive");
      expect(await answer.getByRole("definition").filter({ hasText: /^1$/ }).count()).toBeGreaterThan(0); // one duplicate
      const timeline = page.getByRole("list", { name: "Audit timeline, oldest first" });
      expect(await timeline.getByRole("listitem").count()).toBe(1);
      expect(await timeline.textContent()).toContain("Claimed");
      // detail.expiresAt shown like every other time, the stored value on hover.
      const detailTime = timeline.locator(`dd time[datetime^="${claimed.expiresAt.slice(0, 19)}"]`);
      expect(await detailTime.count()).toBe(1);
      expect(await detailTime.innerText()).toMatch(/^\d{1,2} \w{3} \d{4}, \d\d:\d\d:\d\d$/);
      expect(await detailTime.getAttribute("title")).toBe(await detailTime.getAttribute("datetime"));

      // Back to the search, by source only: a results table whose event ids link to their pages.
      await page.goto(`${e2e.baseUrl}/audit?source=${source}`);
      const table = page.getByRole("table");
      await table.getByRole("row").nth(4).waitFor();
      expect(await table.getByRole("row").count()).toBe(5); // header + 4 claims
      expect(await page.getByRole("link", { name: "Export CSV" }).getAttribute("href")).toBe(`/api/v1/audit/export?source=${source}`);
      await table.getByRole("link", { name: eventId }).click();
      await page.waitForURL(/\/events\//);
      await page.getByRole("region", { name: "Answer" }).getByText(/key alive until/).waitFor();
      expect(errors).toEqual([]);
    },
    BROWSER_TEST_MS,
  );

  it(
    "an event whose key was pruned explains as processed, key expired and pruned; an unknown one as never seen",
    async () => {
      const source = await makeSource(1);
      const eventId = uniq("pruned");
      const claimed = await claim(source, eventId);
      await untilDatabaseClockPasses(claimed.expiresAt); // the 1 s TTL (its end is in the audit history too)
      await pruneExpiredKeys({ trigger: "cli", pauseMs: 0 });
      const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM dedup_keys WHERE source = $1", [source]);
      expect(n).toBe(0);

      const { page, errors } = await viewerOnAudit();
      await page.getByLabel("Event id", { exact: true }).fill(eventId);
      await page.getByLabel("Source", { exact: true }).selectOption(source);
      await page.getByRole("form", { name: "Search the audit history" }).getByRole("button", { name: "Search", exact: true }).click();
      const answer = page.getByRole("region", { name: "Answer" });
      await answer.getByText(/Processed at .*; key expired at .* and was pruned\./).waitFor();
      expect(await answer.textContent()).toContain("Key expired and pruned");
      expect(await answer.getByRole("definition").filter({ hasText: "not kept once the key is gone" }).count()).toBe(1);
      const expiresAt = page.locator(`time[datetime="${claimed.expiresAt}"]`);
      expect(await expiresAt.count()).toBeGreaterThan(0);

      await page.goto(`${e2e.baseUrl}/events/${source}/never-${uniq()}`);
      await page.getByText("Never seen: no key now and no claim in the audit history.").waitFor();
      await page.getByRole("heading", { name: "No audit rows" }).waitFor();
      expect(errors).toEqual([]);
    },
    BROWSER_TEST_MS,
  );

  it(
    "an operator's release in the Activity log links to the event's page, which explains the release",
    async () => {
      const source = await makeSource();
      const eventId = uniq("stuck");
      const leased = await call(e2e.baseUrl, "POST", "/api/v1/claims", {
        key: claimKey,
        body: { source, eventId, eventType: "invoice.paid", leaseSeconds: 600 },
      });
      expect(leased.status).toBe(201);
      const operatorKey = (await makeApiKey(["operator"])).key;
      const released = await call(e2e.baseUrl, "POST", "/api/v1/claims/release", { key: operatorKey, body: { source, eventId } });
      expect(released.status).toBe(200);

      const { page, errors } = await viewerOnAudit("operator");
      await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Activity" }).click();
      await page.waitForURL(e2e.baseUrl + "/activity");
      await page.getByRole("link", { name: `${source}/${eventId}` }).click();
      await page.waitForURL(`${e2e.baseUrl}/events/${source}/${eventId}`);
      const answer = page.getByRole("region", { name: "Answer" });
      await answer.getByText(/^Claimed at .* and released at .*: the key was deleted/).waitFor();
      const timeline = page.getByRole("list", { name: "Audit timeline, oldest first" });
      await timeline.getByText("Operator action").waitFor();
      expect(await timeline.getByRole("listitem").count()).toBe(3); // claimed, released, the operator's key.release
      expect(errors).toEqual([]);
    },
    BROWSER_TEST_MS,
  );

  it(
    "a search that matches nothing says so, and a bad filter shows the server's message",
    async () => {
      const { page, errors } = await viewerOnAudit();
      await page.goto(`${e2e.baseUrl}/audit?source=${await makeSource()}`);
      await page.getByRole("heading", { name: "No audit row matches" }).waitFor();
      await page.goto(`${e2e.baseUrl}/audit?kind=NOT%20A%20KIND`);
      await page.getByRole("alert").getByText(/kind: must be a kind such as/).waitFor();
      expect(errors.filter((e) => !/422/.test(e))).toEqual([]);
    },
    BROWSER_TEST_MS,
  );
});
