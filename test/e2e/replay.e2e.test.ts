/**
 * The Replay screen in a real headless Chromium, against the real server (its replay worker on) and a
 * real local receiver (test/setup/receiver.ts: verifies the signature, claims through the claim API,
 * counts what it processed). An operator drives the wizard end to end: select → preflight (right counts
 * per category) → extend → confirm by typing the count → progress → results; the receiver got each
 * included event and never the one processed before whose key is gone. An admin sets a destination and
 * a signing secret on the Sources screen; a viewer sees the lists but no action. No page may report a
 * browser error.
 */
import type { Locator, Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { claimEvent } from "@/lib/claims/claim";
import { rotateSigningSecret } from "@/lib/sources/signing-secret";
import { createSource, updateSource } from "@/lib/sources/sources";
import { call } from "@/test/setup/auth";
import { sql, uniq } from "@/test/setup/db";
import { useConsoleServer } from "@/test/setup/e2e";
import { expireKey, makeApiKey } from "@/test/setup/http";
import { startReceiver, type Receiver } from "@/test/setup/receiver";
import { createSourceRequest } from "@/lib/sources/schema";
import { parseInput } from "@/lib/http/validate";

/**
 * The Replay screen for one source (its shareable URL), with the keys-at-risk list open: the suite's other
 * files share the database, so unfiltered the list is long (collapsed above 5 keys) and shows other letters.
 */
async function openRiskList(page: Page, source: string): Promise<Locator> {
  await page.goto(`${e2e.baseUrl}/replay?source=${encodeURIComponent(source)}`);
  const risk = page.getByRole("region", { name: "Keys at risk" });
  const toggle = risk.getByRole("button", { name: /the list/ });
  await toggle.waitFor();
  if ((await toggle.getAttribute("aria-expanded")) === "false") await toggle.click();
  return risk;
}

const BROWSER_TEST_MS = 120_000;

const e2e = useConsoleServer({
  // The replay worker runs in the server process (on by default; said here so the test does not depend on it).
  KEYWARD_REPLAY_WORKER: "true",
  KEYWARD_REPLAY_POLL_MS: "100",
});
const receivers: Receiver[] = [];

afterAll(async () => {
  for (const r of receivers) await r.stop().catch(() => {});
});

/**
 * A source on the stripe preset (TTL 7d, replay margin 2d23h55m, which is the default replay window)
 * whose replays go to a fresh receiver, and its dead letters posted through the API:
 * - alive-1, alive-2: processed, keys alive for ~7d → `alive`;
 * - soon: processed, key expires in 2 h (inside the window) → `expiring`;
 * - gone: processed, key expired (not pruned) → `expired_processed`;
 * - new-1..3: never claimed → `never_processed`.
 */
async function seedScenario(): Promise<{ source: string; receiver: Receiver; ids: Record<string, string> }> {
  const source = uniq("rp");
  await createSource(parseInput(createSourceRequest, { name: source, preset: "stripe" }), cliPrincipal());
  const claimsKey = await makeApiKey(["claims:write"]);
  const receiver = await startReceiver({ keywardUrl: e2e.baseUrl, apiKey: claimsKey.key, source });
  receivers.push(receiver);
  await updateSource(source, { replayDestination: receiver.url }, cliPrincipal());
  const { secret } = await rotateSigningSecret(source, cliPrincipal());
  receiver.setSecret(secret);

  const ids = {
    alive1: uniq("evt-alive"),
    alive2: uniq("evt-alive"),
    soon: uniq("evt-soon"),
    gone: uniq("evt-gone"),
    new1: uniq("evt-new"),
    new2: uniq("evt-new"),
    new3: uniq("evt-new"),
  };
  for (const eventId of [ids.alive1, ids.alive2, ids.soon, ids.gone]) {
    expect((await claimEvent({ source, eventId, eventType: "invoice.paid" })).outcome).toBe("claimed");
  }
  await sql("UPDATE dedup_keys SET expires_at = now() + interval '2 hours' WHERE source = $1 AND event_id = $2", [source, ids.soon]);
  await expireKey(source, ids.gone);

  const dlKey = await makeApiKey(["deadletters:write"]);
  const items = Object.values(ids).map((eventId, i) => ({
    source,
    eventId,
    eventType: "invoice.paid",
    payload: { id: eventId, type: "invoice.paid", n: i },
    error: i % 2 === 0 ? "handler timeout after 30s" : "upstream 503",
    attempts: 5,
  }));
  const res = await call(e2e.baseUrl, "POST", "/api/v1/dead-letters/batch", { key: dlKey.key, body: { items } });
  expect(res.status).toBe(200);
  expect(res.body.results.every((r: { id?: string }) => typeof r.id === "string")).toBe(true);
  return { source, receiver, ids };
}

const wizard = (page: Page): Locator => page.getByRole("region", { name: "Replay wizard" });

async function categoryCount(page: Page, category: string): Promise<string> {
  return wizard(page).getByTestId(`count-${category}`).innerText();
}

/** Buttons that act (start a wizard, change a replay); Open only shows a replay. */
const ACTION_BUTTONS = /^(replay|run preflight|extend|start replay|pause|resume|cancel)/i;

describe("the Replay screen in Chromium", () => {
  it("takes an operator through the wizard: preflight counts, extend, confirm by count, progress, all delivered, the expired processed one not sent", async () => {
    const { source, receiver, ids } = await seedScenario();
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "operator", "Replay");

    // The warning lists the expired key before the one expiring in 2 h.
    const risk = await openRiskList(page, source);
    await risk.getByText(ids.soon).waitFor();
    const riskText = await risk.innerText();
    expect(riskText.indexOf(ids.gone)).toBeGreaterThanOrEqual(0);
    expect(riskText.indexOf(ids.gone)).toBeLessThan(riskText.indexOf(ids.soon));

    // Filter the list to this source (the select), then by its count chip for the error (a click filters).
    const filters = page.getByRole("form", { name: "Filter dead letters" });
    await filters.getByLabel("Source", { exact: true }).selectOption(source);
    await filters.getByRole("button", { name: "Filter", exact: true }).click();
    await page.getByText(`7 of 7 dead letters shown`).waitFor();
    await page.getByRole("button", { name: "Show error upstream 503 3" }).click();
    await page.getByText(`3 of 3 dead letters shown`).waitFor();
    expect(await page.getByRole("table", { name: "Dead letters", exact: true }).getByRole("link", { name: ids.alive2 }).getAttribute("href")).toBe(
      `/events/${source}/${ids.alive2}`,
    );
    await page.getByRole("button", { name: "Clear filters" }).click();
    await filters.getByLabel("Source", { exact: true }).selectOption(source);
    await filters.getByRole("button", { name: "Filter", exact: true }).click();
    await page.getByText(`7 of 7 dead letters shown`).waitFor();

    // 1. select → 2. preflight
    await page.getByRole("button", { name: `Replay pending dead letters of ${source}…` }).click();
    const w = wizard(page);
    expect(await w.innerText()).toContain(`every pending dead letter of ${source}`);
    await w.getByRole("button", { name: "Run preflight" }).click();
    await w.getByRole("table", { name: "Preflight summary" }).waitFor();
    expect(await categoryCount(page, "alive")).toBe("2");
    expect(await categoryCount(page, "expiring")).toBe("1");
    expect(await categoryCount(page, "expired_processed")).toBe("1");
    expect(await categoryCount(page, "never_processed")).toBe("3");
    expect(await categoryCount(page, "in_flight")).toBe("0");
    const summary = await w.getByRole("table", { name: "Preflight summary" }).innerText();
    expect(summary).toContain("the handler's claim will reject the replay as a duplicate");
    expect(summary).toContain("replaying it would process it twice");
    expect(await w.getByRole("timer", { name: "Preflight validity" }).innerText()).toMatch(/^valid for 1[45]:\d\d$/);

    // 3. extend: the expiring key now outlives the window; the preflight is classified again.
    await w.getByRole("button", { name: "Next: extend keys" }).click();
    await w.getByRole("button", { name: /^Extend \d+ keys$/ }).click();
    await w.getByText(/^Extended \d+ keys?\./).waitFor();
    expect(await categoryCount(page, "expiring")).toBe("0");
    expect(await categoryCount(page, "alive")).toBe("3");
    const [soonKey] = await sql<{ hours: number }>(
      "SELECT extract(epoch FROM expires_at - now())::float8 / 3600 AS hours FROM dedup_keys WHERE source = $1 AND event_id = $2",
      [source, ids.soon],
    );
    expect(soonKey.hours).toBeGreaterThan(70);

    // 4. confirm: alive + never processed are ticked, the expired processed one is not; type the count.
    await w.getByRole("button", { name: "Next: confirm" }).click();
    const confirm = w.getByRole("form", { name: "Confirm the replay" });
    expect(await confirm.getByRole("checkbox", { name: /^Key alive \(3\)/ }).isChecked()).toBe(true);
    expect(await confirm.getByRole("checkbox", { name: /^Never processed \(3\)/ }).isChecked()).toBe(true);
    expect(await confirm.getByRole("checkbox", { name: /^Expired, processed \(1\)/ }).isChecked()).toBe(false);
    expect(await confirm.getByRole("checkbox", { name: /^In flight/ }).isDisabled()).toBe(true);
    // Including the expired processed one makes it a forced replay: a reason and the source's name.
    await confirm.getByRole("checkbox", { name: /^Expired, processed \(1\)/ }).check();
    await confirm.getByLabel("Reason for forcing").waitFor();
    await confirm.getByLabel("Type the source name to confirm").fill("7");
    expect(await confirm.getByRole("button", { name: "Start replay of 7 events" }).isDisabled()).toBe(true);
    await confirm.getByRole("checkbox", { name: /^Expired, processed \(1\)/ }).uncheck();
    expect(await confirm.getByLabel("Reason for forcing").count()).toBe(0);
    const start = confirm.getByRole("button", { name: "Start replay of 6 events" });
    await confirm.getByLabel("Type the number of events to confirm").fill("5");
    expect(await start.isDisabled()).toBe(true);
    await confirm.getByLabel("Type the number of events to confirm").fill("6");
    await start.click();

    // 5. progress → 6. results
    await w.getByRole("progressbar", { name: "Replay progress" }).waitFor();
    await w.getByText("Succeeded: 6 delivered of 6.").waitFor({ timeout: 60_000 });
    expect(await w.getByText("All 6 events were delivered.").count()).toBe(1);
    expect(await w.locator('[data-outcome="delivered"]').innerText()).toBe("6");
    // Where it sent: the source's destination, as the executor read it.
    expect(await w.getByTestId("replay-destination").innerText()).toBe(`Sent to ${receiver.url}`);

    // The receiver got each included event once: the never-processed ones were processed, the processed
    // ones with live keys answered as duplicates, and the one whose key is gone was never sent.
    const counts = receiver.snapshot();
    expect(counts.badSignatures).toBe(0);
    expect(counts.requests).toBe(6);
    expect(counts.duplicates).toBe(3);
    for (const id of [ids.new1, ids.new2, ids.new3]) expect(receiver.timesProcessed(id)).toBe(1);
    for (const id of [ids.alive1, ids.alive2, ids.soon, ids.gone]) expect(receiver.timesProcessed(id)).toBe(0);
    expect(receiver.processedTwice()).toEqual([]);

    // The replays list has it; the dead letter that was not included is still pending.
    const open = page.getByRole("table", { name: "Replays, newest first" }).getByRole("button", { name: new RegExp(`^Open replay of ${source}`) });
    await open.click();
    const opened = page.getByRole("region", { name: `Replay of ${source}: results` });
    await opened.getByText("Succeeded: 6 delivered of 6.").waitFor();
    expect(await opened.innerText()).toContain("includes alive, never_processed");
    const [gone] = await sql<{ status: string }>("SELECT status FROM dead_letters WHERE source = $1 AND event_id = $2", [source, ids.gone]);
    expect(gone.status).toBe("pending");
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("shows a viewer the dead letters, the warning and the replays, with no wizard or replay action", async () => {
    const { source, ids } = await seedScenario();
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "viewer", "Replay");
    await (await openRiskList(page, source)).getByText(ids.gone).waitFor();
    const filters = page.getByRole("form", { name: "Filter dead letters" });
    await filters.getByLabel("Source", { exact: true }).selectOption(source);
    await filters.getByRole("button", { name: "Filter", exact: true }).click();
    await page.getByText(`7 of 7 dead letters shown`).waitFor();
    expect(await page.getByRole("table", { name: "Dead letters", exact: true }).getByRole("link", { name: ids.new1 }).count()).toBe(1);
    await page.getByRole("heading", { name: "Replays" }).waitFor();
    expect(await page.getByRole("button", { name: ACTION_BUTTONS }).count()).toBe(0);
    expect(await page.getByRole("checkbox").count()).toBe(0);
    expect(await page.getByRole("region", { name: "Replay wizard" }).count()).toBe(0);
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("lets an admin set a source's replay destination and generate its signing secret, shown once", async () => {
    const source = uniq("rp-src");
    await createSource(parseInput(createSourceRequest, { name: source, preset: "stripe" }), cliPrincipal());
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "admin", "Sources");
    const card = page.getByRole("article", { name: source });
    await card.waitFor();
    expect(await card.innerText()).toMatch(/Replay destination\s*Not set/);

    await card.getByRole("button", { name: `Set destination of ${source}` }).click();
    const field = card.getByLabel(`Replay destination of ${source}`, { exact: true });
    await field.fill("billing.internal/replay");
    await card.getByRole("button", { name: "Save destination" }).click();
    expect(await card.getByRole("alert").innerText()).toMatch(/full URL/);
    await field.fill("https://billing.internal/replay");
    await card.getByRole("button", { name: "Save destination" }).click();
    await card.getByText("https://billing.internal/replay").waitFor();

    await card.getByRole("button", { name: `Generate signing secret of ${source}` }).click();
    await card.getByRole("button", { name: "Generate", exact: true }).click();
    const secret = card.getByRole("region", { name: `Signing secret of ${source}` });
    const value = await secret.locator("pre code").innerText();
    expect(value).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    await card.getByRole("button", { name: `Rotate signing secret of ${source}` }).waitFor();
    await secret.getByRole("button", { name: "I have stored it, hide it" }).click();
    expect(await card.getByText(value).count()).toBe(0);
    expect(await card.getByText("Rotation grace period").count()).toBe(0); // a first secret overlaps nothing

    // Rotating: the old secret keeps signing next to the new one until the grace period's end, shown on the card.
    await card.getByRole("button", { name: `Rotate signing secret of ${source}` }).click();
    expect(await card.innerText()).toMatch(/signed with both the current and the new secret for a grace period/);
    await card.getByRole("button", { name: "Rotate now", exact: true }).click();
    const rotated = card.getByRole("region", { name: `Signing secret of ${source}` });
    await rotated.getByText(/The previous secret keeps signing replays next to this one until/).waitFor();
    await rotated.getByRole("button", { name: "I have stored it, hide it" }).click();
    const grace = card.getByTestId("signing-grace");
    await grace.waitFor();
    expect(await grace.innerText()).toMatch(/^The previous secret also signs replays until .+: switch the destination to the new one before then$/);
    const [{ until }] = await sql<{ until: Date }>("SELECT signing_secret_grace_until AS until FROM sources WHERE name = $1", [source]);
    expect(await grace.locator("time").getAttribute("datetime")).toBe(until.toISOString());

    const [row] = await sql<{ replay_destination: string; set: boolean }>(
      "SELECT replay_destination, signing_secret_set_at IS NOT NULL AS set FROM sources WHERE name = $1",
      [source],
    );
    expect(row).toEqual({ replay_destination: "https://billing.internal/replay", set: true });
    // Listed again, the source carries when the secret was set, never the secret.
    const listed = await page.evaluate(async () => (await fetch("/api/v1/sources")).text());
    expect(listed).not.toContain(value);
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);
});
