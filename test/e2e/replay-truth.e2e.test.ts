/**
 * Issue 23 items 1, 2, 3 and 7 in a real headless Chromium against the real server (its replay worker on)
 * and a real receiver (test/setup/receiver.ts):
 * - 1 a finished replay has an outcome (succeeded, partial, failed, cancelled), in its colour in the wizard,
 *   the list, the detail page, the Overview, the API and the CLI; never "ok" because it finished;
 * - 2 the preflight checks everything Start checks before the count is typed: a source without a signing
 *   secret stops the wizard at its preflight, naming the admin action and linking to it;
 * - 3 retries wait on the replay's schedule and survive a destination down for a few seconds;
 * - 7 "Retry failed" from the results and the detail page, a letter's page with its key and its own replay.
 */
import type { Locator, Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { rotateSigningSecret } from "@/lib/sources/signing-secret";
import { createSourceRequest } from "@/lib/sources/schema";
import { createSource, updateSource } from "@/lib/sources/sources";
import { call } from "@/test/setup/auth";
import { sql, uniq } from "@/test/setup/db";
import { useConsoleServer } from "@/test/setup/e2e";
import { makeApiKey } from "@/test/setup/http";
import { startReceiver, type Receiver, type ReceiverOptions } from "@/test/setup/receiver";
import { startTcpProxy, type TcpProxy } from "@/test/setup/tcp-proxy";

const BROWSER_TEST_MS = 150_000;
const POLL = { timeout: 60_000, interval: 200 };

const e2e = useConsoleServer({ KEYWARD_REPLAY_WORKER: "true", KEYWARD_REPLAY_POLL_MS: "100" });
const receivers: Receiver[] = [];
const proxies: TcpProxy[] = [];
afterAll(async () => {
  for (const r of receivers) await r.stop().catch(() => {});
  for (const p of proxies) await p.close().catch(() => {});
});

/** Puts a TCP proxy we control between the source's destination and its receiver: `refuse` is a destination that is down. */
async function behindProxy(source: string, receiver: Receiver): Promise<TcpProxy> {
  const target = new URL(receiver.url);
  const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
  proxies.push(proxy);
  await updateSource(source, { replayDestination: `http://127.0.0.1:${proxy.port}${target.pathname}` }, cliPrincipal());
  return proxy;
}

/** A source replaying to a fresh receiver (with these knobs; `noSecret` leaves it without a signing secret), and `n` never-processed letters. */
async function seed(n: number, knobs: Partial<ReceiverOptions> & { noSecret?: boolean } = {}) {
  const source = uniq("truth");
  await createSource(parseInput(createSourceRequest, { name: source, preset: "stripe" }), cliPrincipal());
  const receiver = await startReceiver({ keywardUrl: e2e.baseUrl, apiKey: (await makeApiKey(["claims:write"])).key, source, ...knobs });
  receivers.push(receiver);
  await updateSource(source, { replayDestination: receiver.url }, cliPrincipal());
  if (!knobs.noSecret) receiver.setSecret((await rotateSigningSecret(source, cliPrincipal())).secret);
  const events = Array.from({ length: n }, () => uniq("evt"));
  const items = events.map((eventId) => ({ source, eventId, eventType: "order.paid", payload: { id: eventId }, error: "handler timeout after 30s", attempts: 5 }));
  const res = await call(e2e.baseUrl, "POST", "/api/v1/dead-letters/batch", { key: (await makeApiKey(["deadletters:write"])).key, body: { items } });
  expect(res.status).toBe(200);
  return { source, receiver, events, ids: res.body.results.map((r: { id: string }) => r.id) as string[] };
}

/** Starts a replay of every pending letter of `source` through the API. */
async function replay(source: string, body: Record<string, unknown> = {}): Promise<string> {
  const key = (await makeApiKey(["operator"])).key;
  const pf = await call(e2e.baseUrl, "POST", "/api/v1/replays/preflight", { key, body: { source } });
  expect(pf.status).toBe(201);
  const started = await call(e2e.baseUrl, "POST", "/api/v1/replays", {
    key,
    headers: { "idempotency-key": uniq("idem") },
    body: { preflightId: pf.body.preflightId, include: ["never_processed"], ...body },
  });
  expect(started.status).toBe(202);
  return started.body.replayId;
}

const readReplay = async (id: string) => (await call(e2e.baseUrl, "GET", `/api/v1/replays/${id}`, { key: (await makeApiKey(["read"])).key })).body;
const wizard = (page: Page): Locator => page.getByRole("region", { name: "Replay wizard" });
const goto = (page: Page, path: string) => page.goto(e2e.baseUrl + path);

/**
 * With KEYWARD_SHOTS_DIR set, saves the page at 1440×900 and 390×844, light and dark (for looking at the
 * screens this file changes); otherwise nothing.
 */
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

/** The tone class of an element (status--ok, status--error, …). */
const toneOf = async (l: Locator) => (await l.getAttribute("class"))?.match(/status--(\w+)/)?.[1];

describe("truthful replays in Chromium", () => {
  it("1: a replay where every item failed reads failed, in red, in the list, the detail page, the Overview and the wizard; never ok", async () => {
    const { source } = await seed(4, { failureRate: 1, failStatus: 400, failBody: '{"error":"bad signature header"}' });
    const id = await replay(source);
    await expect.poll(async () => (await readReplay(id)).status, POLL).toBe("completed");
    const r = await readReplay(id);
    expect(r).toMatchObject({ outcome: "failed", counts: { delivered: 0, failed: 4 } });
    expect(r.health.state).toBe("finished");
    // The Overview's API lists it among the newest that did not succeed (right after: other files' replays
    // finish in this shared database too, and the list keeps five).
    const overview = (await call(e2e.baseUrl, "GET", "/api/v1/overview", { key: (await makeApiKey(["read"])).key })).body;
    expect(overview.replays.recentlyFinished.find((x: { id: string }) => x.id === id)).toMatchObject({ outcome: "failed", delivered: 0, failed: 4, total: 4 });
    expect(overview.replays.finishedLastDay.failed).toBeGreaterThanOrEqual(1);

    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "viewer", "Replay");
    // The list: the outcome in red, no "ok" badge.
    const row = page.getByRole("table", { name: "Replays, newest first" }).getByRole("row").filter({ hasText: source });
    const badge = row.locator('[data-replay-outcome="failed"]');
    await badge.waitFor();
    expect(await toneOf(badge)).toBe("error");
    expect(await row.locator('[data-health="ok"]').count()).toBe(0);
    // The detail page.
    await goto(page, `/replays/${id}`);
    const panel = page.getByRole("region", { name: `Replay of ${source}: results` });
    await panel.getByText("Failed: 0 delivered, 4 failed of 4.").waitFor();
    expect(await toneOf(panel.locator('[data-replay-outcome="failed"]'))).toBe("error");
    expect(await panel.locator("[data-health]").count()).toBe(0);
    await shoot(page, "replay-failed");
    // The Overview: failed replays in red, each with its numbers and its link (this one, or others of the
    // shared database that finished since).
    await goto(page, "/");
    const recent = page.getByTestId("overview-recent-replays");
    await recent.waitFor();
    expect(await recent.innerText()).toMatch(/\d+ failed/);
    const line = recent.getByTestId("overview-recent-replay").filter({ has: page.locator('[data-replay-outcome="failed"]') }).first();
    expect(await toneOf(line.locator('[data-replay-outcome="failed"]'))).toBe("error");
    expect(await line.innerText()).toMatch(/0 of \d+ delivered/);
    expect(await line.getByRole("link").getAttribute("href")).toMatch(/^\/replays\/[0-9a-f-]{36}$/);
    await shoot(page, "overview");

    // The wizard's results step, for a replay started in it (an operator).
    const second = await seed(2, { failureRate: 1, failStatus: 400 });
    const op = await e2e.openPage();
    await e2e.signInAs(op.page, "operator");
    await goto(op.page, `/replay?source=${second.source}`);
    await op.page.getByRole("button", { name: `Replay pending dead letters of ${second.source}…` }).click();
    const w = wizard(op.page);
    await w.getByRole("button", { name: "Run preflight" }).click();
    await w.getByRole("button", { name: "Next: confirm" }).click();
    await w.getByLabel("Type the number of events to confirm").fill("2");
    await w.getByRole("button", { name: "Start replay of 2 events" }).click();
    await w.getByText("Failed: 0 delivered, 2 failed of 2.").waitFor({ timeout: 60_000 });
    expect(await toneOf(w.locator('[data-replay-outcome="failed"]'))).toBe("error");
    expect(errors).toEqual([]);
    expect(op.errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("1: partial and succeeded replays read so in the API", async () => {
    const ok = await seed(2);
    const half = await seed(8, { failureRate: 0.5, failStatus: 400, seed: 7 });
    const [a, b] = [await replay(ok.source), await replay(half.source)];
    await expect.poll(async () => (await readReplay(a)).status, POLL).toBe("completed");
    await expect.poll(async () => (await readReplay(b)).status, POLL).toBe("completed");
    expect((await readReplay(a)).outcome).toBe("succeeded");
    const partial = await readReplay(b);
    expect(partial.counts.delivered).toBeGreaterThan(0);
    expect(partial.counts.failed).toBeGreaterThan(0);
    expect(partial.outcome).toBe("partial");
  }, BROWSER_TEST_MS);

  it("2: the wizard stops at the preflight when the source has no signing secret, names the admin action and links it; it can no longer fail at Start", async () => {
    const { source } = await seed(2, { noSecret: true });
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "operator");
    await goto(page, `/replay?source=${source}`);
    await page.getByRole("button", { name: `Replay pending dead letters of ${source}…` }).click();
    const w = wizard(page);
    await w.getByRole("button", { name: "Run preflight" }).click();
    await w.getByTestId("preflight-not-ready").waitFor();
    const secret = w.getByRole("list", { name: "Readiness checks" }).locator('[data-check="signing_secret"]');
    expect(await secret.getAttribute("data-state")).toBe("fail");
    const text = await secret.innerText();
    expect(text).toContain("signing_secret_missing");
    expect(text).toContain("Who can fix it: an admin.");
    expect(text).toContain("Generate signing secret");
    expect(text).toContain("Operators cannot set secrets.");
    expect(await secret.getByRole("link").getAttribute("href")).toBe(`/sources#replay-target-${source}`);
    await shoot(page, "wizard-not-ready");
    // The other checks pass: the destination is set and answers (DNS, connect).
    const checks = w.getByRole("list", { name: "Readiness checks" });
    expect(await checks.locator('[data-check="destination"]').getAttribute("data-state")).toBe("pass");
    expect(await checks.locator('[data-check="permission"]').getAttribute("data-state")).toBe("pass");
    expect(await checks.locator('[data-check="reachable"]').getAttribute("data-state")).toBe("pass");
    // No way on to the count: the confirm step is never reached.
    expect(await w.getByRole("button", { name: /^Next:/ }).count()).toBe(0);
    expect(await w.getByRole("form", { name: "Confirm the replay" }).count()).toBe(0);

    // An admin generates the secret; "Check again" lets the operator go on, and Start succeeds.
    await rotateSigningSecret(source, cliPrincipal());
    await w.getByRole("button", { name: "Check again" }).click();
    await w.getByRole("button", { name: "Next: confirm" }).click();
    await w.getByLabel("Type the number of events to confirm").fill("2");
    await w.getByRole("button", { name: "Start replay of 2 events" }).click();
    await w.getByRole("progressbar", { name: "Replay progress" }).waitFor();
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("2: an unreachable destination warns (connect refused) without blocking; a missing destination blocks", async () => {
    const { source } = await seed(1);
    await updateSource(source, { replayDestination: "http://127.0.0.1:9/never" }, cliPrincipal());
    const key = (await makeApiKey(["operator"])).key;
    const pf = await call(e2e.baseUrl, "POST", "/api/v1/replays/preflight", { key, body: { source } });
    expect(pf.status).toBe(201);
    expect(pf.body.ready).toBe(true);
    const reach = pf.body.checks.find((c: { check: string }) => c.check === "reachable");
    expect(reach).toMatchObject({ state: "warn", blocksStart: false });
    expect(reach.detail).toMatch(/CONNECT failed: .*ECONNREFUSED/);
    await updateSource(source, { replayDestination: null }, cliPrincipal());
    const again = await call(e2e.baseUrl, "POST", "/api/v1/replays/preflight", { key, body: { source } });
    expect(again.body.ready).toBe(false);
    expect(again.body.checks.find((c: { check: string }) => c.check === "destination")).toMatchObject({ state: "fail", blocksStart: true });
    // A viewer reads the preflight with the permission check failing.
    const viewer = await call(e2e.baseUrl, "GET", `/api/v1/replays/preflight/${again.body.preflightId}`, { key: (await makeApiKey(["read"])).key });
    expect(viewer.body.checks.find((c: { check: string }) => c.check === "permission")).toMatchObject({ state: "fail" });
  }, BROWSER_TEST_MS);

  it("3: a destination down for a few seconds no longer fails the replay: items wait on the replay's schedule, the next attempt shown", async () => {
    const { source, receiver } = await seed(3);
    const proxy = await behindProxy(source, receiver);
    proxy.setMode("refuse");
    // Enough attempts that it cannot run out while the page loads on a busy machine (4 s waits at most).
    const id = await replay(source, { retry: { maxAttempts: 30, initialDelaySeconds: 1, maxDelaySeconds: 4 } });
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "viewer");
    await goto(page, `/replays/${id}`);
    // While it is down: the items wait, each with its next attempt time; the schedule is named.
    const waiting = page.getByRole("region", { name: "Waiting for retry" });
    await waiting.getByTestId("next-attempt").first().waitFor({ timeout: 30_000 });
    expect(await page.getByTestId("retry-schedule").innerText()).toBe("up to 30 attempts, waits from 1s doubling to 4s (jittered)");
    const downAt = Date.now();
    await expect.poll(async () => Math.max(...(await readReplay(id)).waiting.map((i: { attempts: number }) => i.attempts)), POLL).toBeGreaterThanOrEqual(3);
    const r = await readReplay(id);
    expect(r.status).toBe("running");
    expect(r.nextAttemptAt).not.toBeNull();
    for (const i of r.waiting) expect(Date.parse(i.nextAttemptAt)).toBeGreaterThan(Date.parse(r.health.lastSettledAt) - 1000);
    // Up again after a few seconds: everything is delivered, nothing failed.
    proxy.setMode("forward");
    await expect.poll(async () => (await readReplay(id)).status, POLL).toBe("completed");
    const done = await readReplay(id);
    expect(done).toMatchObject({ outcome: "succeeded", counts: { delivered: 3, failed: 0 } });
    expect(Math.max(...done.items.map((i: { attempts: number }) => i.attempts))).toBeGreaterThanOrEqual(3);
    expect(Date.now() - downAt).toBeGreaterThan(1000);
    await page.getByText("Succeeded: 3 delivered of 3.").waitFor();
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("3: a retry far off holds no worker (no busy wait), is kept in the database, and \"Retry now\" sends it at once", async () => {
    const { source, receiver } = await seed(2);
    const proxy = await behindProxy(source, receiver);
    proxy.setMode("refuse");
    const id = await replay(source, { retry: { maxAttempts: 3, initialDelaySeconds: 600, maxDelaySeconds: 600 } });
    await expect.poll(async () => (await readReplay(id)).waiting.length, POLL).toBe(2);
    const r = await readReplay(id);
    // Equal jitter: between 5 and 10 minutes away.
    for (const i of r.waiting) {
      expect(Date.parse(i.nextAttemptAt) - Date.now()).toBeGreaterThan(280_000);
      expect(Date.parse(i.nextAttemptAt) - Date.now()).toBeLessThan(600_000);
    }
    // Persisted (a restarted server reads the same time), and no worker holds or polls the replay meanwhile.
    const rows = await sql<{ dead_letter_id: string; next_attempt_at: Date }>("SELECT dead_letter_id, next_attempt_at FROM replay_items WHERE replay_id = $1", [id]);
    for (const w of r.waiting) expect(rows.find((x) => x.dead_letter_id === w.deadLetterId)!.next_attempt_at.toISOString()).toBe(w.nextAttemptAt);
    await expect.poll(async () => (await sql<{ worker: string | null }>("SELECT worker FROM replays WHERE id = $1", [id]))[0].worker, POLL).toBeNull();
    expect((await readReplay(id)).health.state).toBe("ok");

    proxy.setMode("forward");
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "operator");
    await goto(page, `/replays/${id}`);
    const waiting = page.getByRole("region", { name: "Waiting for retry" });
    const first = waiting.getByTestId("waiting-item").first();
    await first.waitFor();
    expect(await first.getByTestId("next-attempt").innerText()).toMatch(/^in \d+m$/);
    await shoot(page, "replay-waiting");
    await first.getByRole("button", { name: /^Retry now / }).click();
    await expect.poll(async () => (await readReplay(id)).counts.delivered, POLL).toBe(1);
    expect((await readReplay(id)).waiting.length).toBe(1);
    const [action] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE detail->>'action' = 'replay.retry_now' AND detail->'target'->>'id' = $1", [id]);
    expect(action.n).toBe(1);
    await call(e2e.baseUrl, "POST", `/api/v1/replays/${id}/cancel`, { key: (await makeApiKey(["operator"])).key });
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("7: \"Retry failed items\" on a replay's page ends on the new replay's URL; the wizard's results step offers it too", async () => {
    const { source, receiver } = await seed(2, { failureRate: 1, failStatus: 400 });
    const id = await replay(source);
    await expect.poll(async () => (await readReplay(id)).status, POLL).toBe("completed");
    receiver.setFailureRate(0);
    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "operator");
    await goto(page, `/replays/${id}`);
    await page.getByRole("button", { name: "Retry failed items" }).click();
    const w = wizard(page);
    await w.getByRole("button", { name: "Next: confirm" }).click();
    await w.getByLabel("Type the number of events to confirm").fill("2");
    await w.getByRole("button", { name: "Start replay of 2 events" }).click();
    await page.waitForURL((url) => /^\/replays\/[0-9a-f-]{36}$/.test(url.pathname) && !url.pathname.endsWith(id));
    const next = new URL(page.url()).pathname.split("/").pop()!;
    await page.getByText("Succeeded: 2 delivered of 2.").waitFor({ timeout: 60_000 });
    expect((await readReplay(next)).outcome).toBe("succeeded");

    // The wizard's results step: a failed replay started in it offers "Retry failed items", which opens its preflight.
    const second = await seed(2, { failureRate: 1, failStatus: 400 });
    await goto(page, `/replay?source=${second.source}`);
    await page.getByRole("button", { name: `Replay pending dead letters of ${second.source}…` }).click();
    await w.getByRole("button", { name: "Run preflight" }).click();
    await w.getByRole("button", { name: "Next: confirm" }).click();
    await w.getByLabel("Type the number of events to confirm").fill("2");
    await w.getByRole("button", { name: "Start replay of 2 events" }).click();
    await w.getByText("Failed: 0 delivered, 2 failed of 2.").waitFor({ timeout: 60_000 });
    second.receiver.setFailureRate(0);
    await w.getByRole("button", { name: "Retry failed items" }).click();
    await w.getByTestId("count-never_processed").waitFor();
    expect(await w.getByTestId("count-never_processed").innerText()).toBe("2");
    expect(await w.getByRole("list", { name: "Steps" }).getByRole("listitem").filter({ hasText: "Preflight" }).getAttribute("aria-current")).toBe("step");
    await w.getByRole("button", { name: "Next: confirm" }).click();
    await w.getByLabel("Type the number of events to confirm").fill("2");
    await w.getByRole("button", { name: "Start replay of 2 events" }).click();
    await w.getByText("Succeeded: 2 delivered of 2.").waitFor({ timeout: 60_000 });
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("7: a dead letter's page shows its key, replays it with the preflight inline, copies links, keeps the attempts inside their card, and shows the headers", async () => {
    const { source, ids } = await seed(1, { failureRate: 1, failStatus: 503, failBody: "upstream down" });
    const id = await replay(source, { retry: { maxAttempts: 1 } });
    await expect.poll(async () => (await readReplay(id)).status, POLL).toBe("completed");
    const { page, errors } = await e2e.openPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await e2e.signInAs(page, "operator");
    await goto(page, `/dead-letters/${ids[0]}`);
    // The key's state and expiry (never claimed here: no key).
    const key = page.getByTestId("dead-letter-key");
    await key.waitFor();
    expect(await key.innerText()).toMatch(/No key/);
    // Copy-link buttons name what they copy.
    expect(await page.getByRole("button", { name: "Copy link to this dead letter" }).count()).toBe(1);
    // The attempts: inside their card (no page overflow at 390 px), Refresh inside the card, the headers sent and received.
    const attempts = page.getByRole("region", { name: "Replay attempts", exact: true });
    await attempts.getByTestId("attempt").first().waitFor();
    expect(await attempts.getByRole("button", { name: "Refresh" }).count()).toBe(1);
    const sizes = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
    expect(sizes.scroll).toBeLessThanOrEqual(sizes.inner);
    const box = await attempts.boundingBox();
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    await attempts.getByText("Headers").first().click();
    const sent = await attempts.getByTestId("request-headers").first().innerText();
    expect(sent).toContain("content-type: application/json");
    expect(sent).toMatch(/webhook-signature: v1,\S{6}… \(masked\)/);
    const got = await attempts.getByTestId("response-headers").first().innerText();
    expect(got).toMatch(/content-type: text\/plain/);
    expect(await attempts.getByTestId("attempt").first().innerText()).toContain("upstream down");
    await shoot(page, "dead-letter");
    // Replay this letter: its preflight (with the readiness checks) inline.
    await page.getByRole("button", { name: "Replay this letter" }).click();
    const w = wizard(page);
    await w.getByRole("list", { name: "Readiness checks" }).waitFor();
    expect(await w.getByTestId("count-never_processed").innerText()).toBe("1");
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);
});
