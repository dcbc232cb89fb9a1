/**
 * The Sources screen in a real headless Chromium, against the real server on this run's database: an
 * admin creates and edits a source and adds and removes a RabbitMQ inlet (the real broker checks it), an
 * operator extends live keys, a viewer only reads. People sign in
 * on the sign-in page; sources and claims made behind the screen go through the library. No page may
 * report a browser error (a CSP violation is one).
 */
import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { claimEvent } from "@/lib/claims/claim";
import { createSource, updateSource } from "@/lib/sources/sources";
import { sql, uniq } from "@/test/setup/db";
import { useConsoleServer } from "@/test/setup/e2e";
import { createSourceRequest } from "@/lib/sources/schema";
import { parseInput } from "@/lib/http/validate";
import { AMQP_URL, makeTopology } from "@/test/setup/rabbitmq";

/** The broker's password in AMQP_URL (never to appear on a page). */
const AMQP_PASSWORD = new URL(AMQP_URL).password;
const BROWSER_TEST_MS = 150_000; // the inlet journey took 51 s in one CI run and over 60 s in the next (2 cores, shared)
const d = 86400;

const e2e = useConsoleServer();

const card = (page: Page, name: string): Locator => page.getByRole("article", { name });

/** Buttons that change something (the CLI hints' Copy buttons name a command, so they are anchored out). */
const ACTION_BUTTONS = /^(create source|edit|extend|save changes)/i;

describe("the Sources screen in Chromium", () => {
  it("lets an admin create a source from the stripe preset (TTL 7d) and set a dead-letter retention that draws a warning", async () => {
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "admin", "Sources");
    const name = uniq("ui-src");
    const create = page.getByRole("region", { name: "Create a source" });

    await create.getByLabel("Name", { exact: true }).fill(name);
    await create.getByLabel("Preset", { exact: true }).selectOption("stripe");
    const retry = create.getByLabel("Retry window", { exact: true });
    expect(await retry.inputValue()).toBe("3d");
    expect(await create.innerText()).toContain("3d + 1d + 5m + 2d23h55m = 7d");

    // A mistyped duration is refused in the browser, next to its field; nothing is sent.
    await retry.fill("3 days");
    await create.getByRole("button", { name: "Create source" }).click();
    expect(await create.getByRole("alert").innerText()).toMatch(/Retry window: "3 days" is not a duration/);
    expect(await retry.getAttribute("aria-invalid")).toBe("true");
    await retry.fill("3d");
    expect(await create.getByRole("alert").count()).toBe(0);
    await create.getByRole("button", { name: "Create source" }).click();
    await create.getByText(`Created ${name}: TTL 7d (preset stripe).`).waitFor();

    const source = card(page, name);
    await source.waitFor();
    expect(await source.innerText()).toContain("3d + 1d + 5m + 2d23h55m = 7d");
    expect(await source.innerText()).toMatch(/All \d checks pass/);

    await source.getByRole("button", { name: `Edit ${name}` }).click();
    const edit = source.getByRole("region", { name: `Edit ${name}` });
    expect(await edit.innerText()).toContain("The new TTL applies to new claims; live keys keep their expiry");
    await edit.getByLabel("Dead-letter retention", { exact: false }).fill("30d");
    await edit.getByRole("button", { name: "Save changes" }).click();
    await source.getByText("1 warning").waitFor();
    const warning = source.locator('[data-check="warn"]');
    expect(await warning.innerText()).toMatch(/Dead letters: dead letters are kept 30d/);
    expect(await source.innerText()).toContain("Saved: TTL 7d for new claims");
    expect(await page.locator("article[data-flagged]", { hasText: name }).count()).toBe(1);

    const [row] = await sql<Record<string, unknown>>(
      `SELECT preset, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds,
              dead_letter_retention_seconds FROM sources WHERE name = $1`,
      [name],
    );
    expect(row).toEqual({
      preset: "stripe",
      retry_window_seconds: 3 * d,
      queue_lag_seconds: d,
      clock_skew_seconds: 300,
      replay_seconds: 3 * d - 300,
      ttl_seconds: 7 * d,
      dead_letter_retention_seconds: 30 * d,
    });
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("lets an operator extend live keys to the current TTL, and not edit or create", async () => {
    const name = uniq("ui-ext");
    await createSource(parseInput(createSourceRequest, { name, preset: "internal" }), cliPrincipal());
    await claimEvent({ source: name, eventId: "evt_1", eventType: "charge" });
    await updateSource(name, { preset: "stripe" }, cliPrincipal());

    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "operator", "Sources");
    const source = card(page, name);
    await source.waitFor();
    expect(await page.getByRole("button", { name: /^(create source|edit)/i }).count()).toBe(0);
    await source.getByRole("button", { name: `Extend live keys of ${name}` }).click();
    expect(await source.getByRole("group", { name: `Extend live keys of ${name}` }).innerText()).toMatch(/never shortens.*action log/s);
    await source.getByRole("button", { name: "Extend to 7d" }).click();
    await source.getByText(/^Extended 1 live key to the 7d TTL\.$/).waitFor();

    const [key] = await sql<{ s: number }>(
      "SELECT extract(epoch FROM expires_at - received_at)::float8 AS s FROM dedup_keys WHERE source = $1 AND event_id = 'evt_1'",
      [name],
    );
    expect(key.s).toBeCloseTo(7 * d, 0);
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("lets an admin add a RabbitMQ inlet (checked against the broker, the URL never shown again), see its lag on the Overview, and remove it", async () => {
    const t = await makeTopology();
    try {
      const name = uniq("ui-inlet");
      await createSource(parseInput(createSourceRequest, { name, preset: "internal" }), cliPrincipal());
      const { page, errors } = await e2e.openPage();
      await e2e.signInAs(page, "admin", "Sources");
      const source = card(page, name);
      await source.waitFor();
      await source.getByRole("button", { name: `Show inlets of ${name}` }).click();
      const panel = source.getByRole("region", { name: `Inlets of ${name}` });
      await panel.getByText(`No inlet: dead letters of ${name} arrive only through the API.`).waitFor();

      const form = panel.getByRole("form", { name: `Add a RabbitMQ inlet to ${name}` });
      const masked = AMQP_URL.replace(`:${AMQP_PASSWORD}@`, ":***@");
      // The masked form is refused in the browser (the password must be typed); nothing is sent.
      await form.getByLabel("AMQP URL").fill(masked);
      await form.getByLabel("Queue").fill(t.dlq);
      await form.getByRole("button", { name: "Add inlet" }).click();
      expect(await form.getByRole("alert").innerText()).toMatch(/masked password/);

      await form.getByLabel("AMQP URL").fill(AMQP_URL);
      await form.getByLabel("Event id from").fill("header:x-event-id");
      await form.getByRole("button", { name: "Add inlet" }).click();
      await form.getByText(`Added: ${t.dlq} at ${masked}. Servers start consuming it within seconds.`).waitFor();
      expect(await form.getByLabel("AMQP URL").inputValue()).toBe("");
      const row = panel.getByRole("row", { name: new RegExp(t.dlq.replace(/\./g, "\\.")) });
      await row.waitFor();
      expect(await row.innerText()).toMatch(/header:x-event-id\s+not consumed yet/);
      expect(await page.content()).not.toContain(`:${AMQP_PASSWORD}@`);
      const [stored] = await sql<{ id: string; url_display: string }>("SELECT id, url_display FROM inlets WHERE source = $1", [name]);
      expect(stored.url_display).toBe(masked);

      // The Overview lists it, with what its consumer reported (here: none runs).
      await sql("UPDATE inlets SET state = 'consuming', lag_messages = 42, lag_checked_at = now() WHERE id = $1", [stored.id]);
      await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Overview" }).click();
      const lag = page.getByRole("region", { name: "Inlets", exact: true });
      const lagRow = lag.getByRole("row", { name: new RegExp(t.dlq.replace(/\./g, "\\.")) });
      await lagRow.waitFor();
      expect(await lagRow.innerText()).toMatch(/Consuming\s+42\s+None yet/);

      // Back by address: the Overview of the shared test database (every file's sources) is slow to leave on a
      // loaded machine, and leaving it is not what this test is about.
      await page.goto(`${e2e.baseUrl}/sources`);
      await source.getByRole("button", { name: `Show inlets of ${name}` }).click();
      await panel.getByRole("button", { name: `Remove inlet ${t.dlq} of ${name}` }).click();
      await panel.getByRole("button", { name: "Remove inlet", exact: true }).click();
      await panel.getByText(`No inlet: dead letters of ${name} arrive only through the API.`).waitFor();
      expect(await sql("SELECT 1 FROM inlets WHERE source = $1", [name])).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await t.cleanup();
    }
  }, BROWSER_TEST_MS);

  it("shows a viewer the sources and their warnings, with no create, edit or extend button", async () => {
    const name = uniq("ui-view");
    await createSource(parseInput(createSourceRequest, { name, preset: "stripe", deadLetterRetentionSeconds: 30 * d }), cliPrincipal());

    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "viewer", "Sources");
    const source = card(page, name);
    await source.waitFor();
    const text = await source.innerText();
    expect(text).toContain("3d + 1d + 5m + 2d23h55m = 7d");
    expect(text).toContain("1 warning");
    expect(text).toMatch(/dead letters are kept 30d/);
    expect(text).toMatch(/Projected steady state/);
    expect(await page.getByRole("region", { name: "Create a source" }).count()).toBe(0);
    expect(await page.getByRole("button", { name: ACTION_BUTTONS }).count()).toBe(0);
    expect(await page.getByRole("button", { name: /inlets of/i }).count()).toBe(0);

    // The presets panel opens to show each preset's parts and where its figures come from.
    await page.getByText(/^Presets \(\d+\)/).click();
    const presets = page.getByRole("table", { name: "TTL presets" });
    await presets.waitFor();
    expect(await presets.locator("tr", { hasText: "stripe" }).first().innerText()).toContain("3d + 1d + 5m + 2d23h55m = 7d");
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);
});
