/**
 * The on-call side of replay (issue 13 §8-14) in a real headless Chromium against the real server (its
 * replay worker on) and a real receiver (test/setup/receiver.ts):
 * - §8 a failing replay shows its health (failing, the last error and its time) in the replays list, the
 *   progress panel and the Overview;
 * - §9 "Retry failed items" on a finished replay opens the wizard on the new preflight;
 * - §10 /dead-letters/{id}: the payload pretty-printed (an 18-digit integer as written), the raw bytes
 *   downloaded exactly, the original error, each attempt (status, answer);
 * - §11 /replays/{id} and /replay?source=…&status=… are links that open the same view;
 * - §12 discard every pending letter of a source that failed since T, after the typed count;
 * - §13 keys at risk leave out never-processed letters;
 * - §14 the event page's headline tells the whole story, links replay and dead-letter ids, and names the
 *   source that knows an id unknown under the chosen one.
 */
import type { Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { claimEvent } from "@/lib/claims/claim";
import { parseInput } from "@/lib/http/validate";
import { rotateSigningSecret } from "@/lib/sources/signing-secret";
import { createSourceRequest } from "@/lib/sources/schema";
import { createSource, updateSource } from "@/lib/sources/sources";
import { call } from "@/test/setup/auth";
import { sql, uniq } from "@/test/setup/db";
import { useConsoleServer } from "@/test/setup/e2e";
import { expireKey, makeApiKey } from "@/test/setup/http";
import { startReceiver, type Receiver, type ReceiverOptions } from "@/test/setup/receiver";

const BROWSER_TEST_MS = 150_000;
const POLL = { timeout: 60_000, interval: 200 };

const e2e = useConsoleServer({ KEYWARD_REPLAY_WORKER: "true", KEYWARD_REPLAY_POLL_MS: "100" });
const receivers: Receiver[] = [];
afterAll(async () => {
  for (const r of receivers) await r.stop().catch(() => {});
});

/** The payload of each letter: JSON text with an 18-digit integer and non-ASCII text, as bytes. */
const payloadOf = (eventId: string) => `{"id":820982911946154508,"event":"${eventId}","note":"café \\/ 200.0"}`;

/** A source replaying to a receiver with these knobs, and `n` never-processed dead letters posted through the API. */
async function seed(n: number, knobs: Partial<ReceiverOptions> = {}) {
  const source = uniq("ops");
  await createSource(parseInput(createSourceRequest, { name: source, preset: "stripe" }), cliPrincipal());
  const receiver = await startReceiver({ keywardUrl: e2e.baseUrl, apiKey: (await makeApiKey(["claims:write"])).key, source, ...knobs });
  receivers.push(receiver);
  await updateSource(source, { replayDestination: receiver.url }, cliPrincipal());
  receiver.setSecret((await rotateSigningSecret(source, cliPrincipal())).secret);
  const events = Array.from({ length: n }, () => uniq("evt"));
  const dlKey = (await makeApiKey(["deadletters:write"])).key;
  const items = events.map((eventId) => ({
    source,
    eventId,
    eventType: "order.paid",
    payloadBase64: Buffer.from(payloadOf(eventId), "utf8").toString("base64"),
    contentType: "application/json",
    error: "handler timeout after 30s",
    attempts: 5,
  }));
  const res = await call(e2e.baseUrl, "POST", "/api/v1/dead-letters/batch", { key: dlKey, body: { items } });
  expect(res.status).toBe(200);
  const ids: string[] = res.body.results.map((r: { id: string }) => r.id);
  return { source, receiver, events, ids };
}

/** Starts a replay of every pending letter of `source` through the API (as the wizard would). */
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

async function replayState(id: string) {
  const [r] = await sql<{ status: string }>("SELECT status FROM replays WHERE id = $1", [id]);
  return r.status;
}

const goto = (page: Page, path: string) => page.goto(e2e.baseUrl + path);

describe("replay operations in Chromium", () => {
  it("shows a failing replay's health (state, last error, its time) in the list, the progress panel and the Overview", async () => {
    const { source } = await seed(6, { failureRate: 1, failStatus: 500, failBody: "database is down" });
    // Many attempts per item, so it is still running (failing) when the page looks: a finished replay shows its outcome instead.
    const id = await replay(source, { ratePerSecond: 2, concurrency: 1, retry: { maxAttempts: 50 } });
    await expect.poll(async () => (await call(e2e.baseUrl, "GET", `/api/v1/replays/${id}`, { key: (await makeApiKey(["read"])).key })).body.health.state, POLL).toBe("failing");

    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "viewer", "Replay");
    // The list: the health badge and the last error.
    const row = page.getByRole("table", { name: "Replays, newest first" }).getByRole("row").filter({ hasText: source });
    await row.locator('[data-health="failing"]').waitFor();
    expect(await row.innerText()).toContain("HTTP 500");
    // The shareable replay page: the progress panel names the state, the reason and the last error with its time.
    await goto(page, `/replays/${id}`);
    const health = page.getByTestId("replay-health");
    await health.waitFor();
    const text = await health.innerText();
    expect(text).toMatch(/Failing: the last \d+ attempts failed/);
    expect(text).toMatch(/Last error at .+: HTTP 500/);
    // The Overview.
    await goto(page, "/");
    const notice = page.getByTestId("overview-replay-health");
    await notice.waitFor();
    expect(await notice.innerText()).toContain(`Replay of ${source}: failing`);
    expect(await notice.getByRole("link", { name: `Replay of ${source}` }).getAttribute("href")).toBe(`/replays/${id}`);
    await call(e2e.baseUrl, "POST", `/api/v1/replays/${id}/cancel`, { key: (await makeApiKey(["operator"])).key });
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("retries a finished replay's failed items through the wizard, and shows a dead letter's evidence, payload and raw bytes", async () => {
    const { source, events, ids } = await seed(3, { failureRate: 1, failStatus: 400, failBody: '{"error":"bad signature header"}' });
    const id = await replay(source);
    await expect.poll(() => replayState(id), POLL).toBe("completed");

    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "operator", "Replay");
    await goto(page, `/replays/${id}`);
    await page.getByRole("button", { name: "Retry failed items" }).click();
    const wizard = page.getByRole("region", { name: "Replay wizard" });
    await wizard.getByTestId("count-never_processed").waitFor();
    expect(await wizard.getByTestId("count-never_processed").innerText()).toBe("3");
    expect(await wizard.getByRole("list", { name: "Steps" }).getByRole("listitem").filter({ hasText: "Preflight" }).getAttribute("aria-current")).toBe("step");

    // The dead letter's page.
    await goto(page, `/dead-letters/${ids[0]}`);
    const payload = page.getByTestId("payload");
    await payload.waitFor();
    const shown = await payload.innerText();
    expect(shown).toContain('"id": 820982911946154508'); // pretty-printed, the integer as written
    expect(shown).toContain("café");
    expect(await page.getByTestId("original-error").innerText()).toBe("handler timeout after 30s");
    const attempt = page.getByTestId("attempt");
    await attempt.first().waitFor();
    expect(await attempt.count()).toBe(1);
    const cells = await attempt.first().innerText();
    expect(cells).toContain("400");
    expect(cells).toContain("bad signature header");
    expect(await attempt.first().getByRole("link").getAttribute("href")).toBe(`/replays/${id}`);
    // The raw bytes, exactly as stored.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download raw bytes" }).click()]);
    // The browser is the tier's shared server (test/setup/chromium-server.ts): the file is read through Playwright.
    const chunks: Buffer[] = [];
    for await (const chunk of await download.createReadStream()) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString("utf8")).toBe(payloadOf(events[0]));

    // Many attempts: the first page, then Load more brings the rest (newest first).
    await sql(
      `INSERT INTO replay_attempts (replay_id, dead_letter_id, attempt, at, destination, status, latency_ms, response_body, error, outcome)
       SELECT $1, $2, n, now() - make_interval(secs => 3600 - n), 'http://127.0.0.1:1/old', 503, 10, 'busy', 'HTTP 503 Service Unavailable: busy', 'retry'
       FROM generate_series(1, 25) n`,
      [id, ids[1]],
    );
    await goto(page, `/dead-letters/${ids[1]}`);
    await expect.poll(() => page.getByTestId("attempt").count(), POLL).toBe(20);
    await page.getByRole("button", { name: "Load more" }).click();
    await expect.poll(() => page.getByTestId("attempt").count(), POLL).toBe(26);

    // §14: the event page tells the whole story and links the replay and the dead letter.
    await goto(page, `/events/${encodeURIComponent(source)}/${encodeURIComponent(events[0])}`);
    const headline = page.getByTestId("event-headline");
    await headline.waitFor();
    expect(await headline.innerText()).toMatch(/Dead-lettered at .+ \(handler timeout after 30s\); replayed at .+ → failed/);
    expect(await page.getByRole("link", { name: id }).first().getAttribute("href")).toBe(`/replays/${id}`);
    expect(await page.getByRole("link", { name: ids[0] }).first().getAttribute("href")).toBe(`/dead-letters/${ids[0]}`);
    // The same id under another source: said so, with a link.
    const other = uniq("ops-other");
    await createSource(parseInput(createSourceRequest, { name: other, preset: "stripe" }), cliPrincipal());
    await goto(page, `/events/${encodeURIComponent(other)}/${encodeURIComponent(events[0])}`);
    const elsewhere = page.getByTestId("other-sources");
    await elsewhere.waitFor();
    expect(await elsewhere.getByRole("link", { name: source }).getAttribute("href")).toBe(`/events/${encodeURIComponent(source)}/${encodeURIComponent(events[0])}`);
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("opens the Replay page from a shared URL, counts only double-processing risks, and discards everything that failed since T after the typed count", async () => {
    const { source, events } = await seed(4);
    // One processed before, its key gone: the only one at risk (the three never processed are safe).
    await claimEvent({ source, eventId: events[0], eventType: "order.paid" });
    await expireKey(source, events[0]);
    // Two failed long ago, two recently.
    await sql("UPDATE dead_letters SET failed_at = now() - interval '3 days' WHERE source = $1 AND event_id = ANY($2)", [source, events.slice(0, 2)]);
    const since = new Date(Date.now() - 86_400_000).toISOString();

    const { page, errors } = await e2e.openPage();
    await e2e.signInAs(page, "operator", "Replay");
    await goto(page, `/replay?source=${encodeURIComponent(source)}&status=pending`);
    await page.getByText("4 of 4 dead letters shown").waitFor();
    const filters = page.getByRole("form", { name: "Filter dead letters" });
    expect(await filters.getByLabel("Source", { exact: true }).inputValue()).toBe(source);
    expect(await filters.getByLabel("Status", { exact: true }).inputValue()).toBe("pending");
    const risk = page.getByRole("region", { name: "Keys at risk" });
    await risk.getByText(events[0]).waitFor();
    expect(await risk.innerText()).toContain("1 processed before");
    for (const safe of events.slice(1)) expect(await risk.getByText(safe).count()).toBe(0);

    // "Everything that failed since T": the From filter, in the URL too.
    await goto(page, `/replay?source=${encodeURIComponent(source)}&from=${encodeURIComponent(since)}`);
    await page.getByText("2 of 2 dead letters shown").waitFor();
    await page.getByRole("button", { name: "Discard or resolve…" }).click();
    await page.getByLabel(/^Reason/).fill("receiver retired, replaying is pointless");
    await page.getByRole("button", { name: "Count them" }).click();
    await page.getByLabel("Type 2 to discard 2 dead letters").fill("2");
    await page.getByRole("button", { name: "Discard 2" }).click();
    await page.getByText("2 dead letters discarded.").waitFor();
    const rows = await sql<{ event_id: string; status: string; settle_reason: string | null }>(
      "SELECT event_id, status, settle_reason FROM dead_letters WHERE source = $1 ORDER BY event_id",
      [source],
    );
    const status = Object.fromEntries(rows.map((r) => [r.event_id, r.status]));
    expect(status).toEqual({ [events[0]]: "pending", [events[1]]: "pending", [events[2]]: "discarded", [events[3]]: "discarded" });
    expect(rows.filter((r) => r.status === "discarded").every((r) => r.settle_reason === "receiver retired, replaying is pointless")).toBe(true);
    // The filters changed on the page are in the URL.
    expect(new URL(page.url()).searchParams.get("source")).toBe(source);
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);
});
