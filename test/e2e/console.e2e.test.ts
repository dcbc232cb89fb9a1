/**
 * The console in a real headless Chromium (Debian's package; .ci/run installs it): the real server on
 * this run's database, people and figures created through the library, everything else done the way a
 * person does it: signing in on the sign-in page, clicking, reading the rendered page. Every page must
 * load without a browser error (a CSP violation is one).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { makeSource, uniq } from "@/test/setup/db";
import { submitSignIn, useConsoleServer } from "@/test/setup/e2e";
import { oidcEnv, startOidcStub, type OidcStub } from "@/test/setup/oidc-stub";

const BROWSER_TEST_MS = 60_000;

const e2e = useConsoleServer();
const { makeUser, openPage, signIn } = e2e;

async function keyStatus(key: string): Promise<number> {
  const res = await fetch(`${e2e.baseUrl}/api/v1/claims/x/y`, { headers: { authorization: `Bearer ${key}` } });
  await res.body?.cancel();
  return res.status;
}

describe("the console in Chromium", () => {
  it("sends someone not signed in to the sign-in page, which shows the form once an admin exists and returns them to the page they opened", async () => {
    const admin = await makeUser("admin");
    const { page, errors } = await openPage();
    await page.goto(e2e.baseUrl + "/api-keys?from=alert");
    await page.waitForURL(e2e.baseUrl + "/sign-in?next=%2Fapi-keys%3Ffrom%3Dalert");
    await expect(page.getByLabel("Username", { exact: true }).isVisible()).resolves.toBe(true);
    await expect(page.getByLabel("Password", { exact: true }).isVisible()).resolves.toBe(true);
    expect(await page.getByText("Create the first admin").count()).toBe(0);
    expect(await page.getByRole("navigation").count()).toBe(0);
    await submitSignIn(page, admin);
    await page.waitForURL(e2e.baseUrl + "/api-keys?from=alert");
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
    // Signed in already: the sign-in page sends them on at once.
    await page.goto(e2e.baseUrl + "/sign-in?next=%2Fsources");
    await page.waitForURL(e2e.baseUrl + "/sources");
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("serves the console's icon at /favicon.ico, which Chromium asks for on its own, to anyone", async () => {
    // Chromium fetches /favicon.ico when a page's <link rel="icon"> has not arrived yet; a 404 there is a
    // browser error on whichever screen it happens.
    const res = await fetch(e2e.baseUrl + "/favicon.ico");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/x-icon");
    const bytes = Buffer.from(await res.arrayBuffer());
    // An ICO directory (reserved 0, type 1) of 16, 32 and 48 px images.
    expect([bytes.readUInt16LE(0), bytes.readUInt16LE(2)]).toEqual([0, 1]);
    const sizes = Array.from({ length: bytes.readUInt16LE(4) }, (_, i) => bytes[6 + 16 * i]);
    expect(sizes).toEqual([16, 32, 48]);
    const { page, errors } = await openPage();
    await page.goto(e2e.baseUrl + "/sign-in");
    await expect(page.locator('link[rel="icon"]').first().getAttribute("href")).resolves.toMatch(/^\/(icon\.svg|favicon\.ico)/);
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("returns to the Overview, never to another site, whatever ?next= says", async () => {
    const viewer = await makeUser("viewer");
    const { page, errors } = await openPage();
    await page.goto(`${e2e.baseUrl}/sign-in?next=${encodeURIComponent("//evil.invalid/x")}`);
    await submitSignIn(page, viewer);
    await page.waitForURL(e2e.baseUrl + "/");
    // Signed in, the sign-in page sends them on at once: to the Overview for each of these.
    for (const next of ["http://evil.invalid", "/\\evil.invalid", "/\t/evil.invalid", "javascript:alert(1)", "/api/v1/session"]) {
      await page.goto(`${e2e.baseUrl}/sign-in?next=${encodeURIComponent(next)}`);
      expect(page.url(), next).toBe(e2e.baseUrl + "/");
    }
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("shows the server's refusal when the password is wrong, and stays on the sign-in page", async () => {
    const username = await makeUser("viewer");
    const { page, errors } = await openPage();
    await page.goto(e2e.baseUrl + "/sign-in");
    await submitSignIn(page, username, "not-the-password");
    // (Next's route announcer is an alert too, an empty one.)
    const alert = page.getByRole("alert").filter({ hasText: "Sign-in failed" });
    await alert.waitFor();
    expect(await alert.innerText()).toContain("invalid username or password");
    expect(new URL(page.url()).pathname).toBe("/sign-in");
    // Chromium logs the refused request itself (the 401) as a console error; nothing else may appear.
    expect(errors.filter((e) => !/Failed to load resource: .*status of 401/.test(e))).toEqual([]);
  }, BROWSER_TEST_MS);

  it("shows a viewer the Overview's figures, but no Activity, Users or API keys and no action", async () => {
    const source = await makeSource(3 * 86400, uniq("ui"));
    for (let i = 0; i < 7; i++) await claimEvent({ source, eventId: `evt_${i % 5}`, eventType: "charge" });
    await claimEvent({ source, eventId: "leased", eventType: "charge", leaseSeconds: 600 });
    await flushClaimCounts();
    const username = await makeUser("viewer");

    const { page, errors } = await openPage();
    await signIn(page, username);
    await page.getByRole("table", { name: "Keys and claim outcomes per source" }).waitFor({ timeout: 20_000 });
    // The shared database may hold more sources than the table shows at first: then its filter finds this one.
    const filter = page.getByLabel("Filter sources by name");
    if (await filter.count()) await filter.fill(source);
    const row = page.locator("tr", { hasText: source });
    await row.waitFor({ timeout: 20_000 });
    const cells = (await row.locator("td").allInnerTexts()).map((t) => t.trim());
    // The source heads the row; then alive, in flight, lease lapsed, expired, claims, duplicates, …
    expect(cells.slice(0, 6)).toEqual(["6", "1", "0", "0", "6", "2"]);

    const banner = page.getByRole("banner");
    expect(await banner.innerText()).toContain(username);
    expect(await banner.innerText()).toContain("viewer");
    const nav = page.getByRole("navigation", { name: "Console" });
    expect(await nav.getByRole("link", { name: "Sources" }).count()).toBe(1);
    for (const hidden of ["Activity", "Users", "API keys"]) {
      expect(await nav.getByRole("link", { name: hidden }).count()).toBe(0);
    }
    expect(await page.getByRole("button", { name: /create|revoke|disable|enable|reset/i }).count()).toBe(0);

    await page.goto(e2e.baseUrl + "/api-keys");
    await page.getByRole("heading", { name: "You need the admin role" }).waitFor();
    expect(await page.getByRole("button", { name: /create|revoke/i }).count()).toBe(0);
    await page.goto(e2e.baseUrl + "/activity");
    await page.getByRole("heading", { name: "You need the operator role" }).waitFor();
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("shows an operator the action log with their own sign-in and its address, but not Users; signing out ends the session", async () => {
    const username = await makeUser("operator");
    const { page, errors } = await openPage();
    await signIn(page, username);
    const nav = page.getByRole("navigation", { name: "Console" });
    expect(await nav.getByRole("link", { name: "Users" }).count()).toBe(0);
    // A click on a link waits for the navigation it starts; the server answered it in over 30 s once, in a CI run
    // on the loaded 2-core machine.
    await nav.getByRole("link", { name: "Activity" }).click({ timeout: 60_000 });
    await page.waitForURL(e2e.baseUrl + "/activity", { timeout: 60_000 });

    await page.getByLabel("Actor", { exact: true }).fill(`user:${username}`);
    await page.getByRole("button", { name: "Filter", exact: true }).click();
    const row = page.locator("tr", { hasText: `user:${username}` }).filter({ hasText: "sign_in" });
    await row.waitFor();
    await row.getByRole("button", { name: /Show/ }).click();
    const details = page.locator("[data-testid=action-details]:not([hidden])");
    expect(await details.innerText()).toMatch(/Address\s+198\.18\./);

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(e2e.baseUrl + "/sign-in");
    await page.goto(e2e.baseUrl + "/");
    await page.waitForURL(e2e.baseUrl + "/sign-in");
    expect(errors).toEqual([]);
  }, 2 * BROWSER_TEST_MS);

  it("lets an admin create an API key, shown once, that works at once and is refused once revoked", async () => {
    const admin = await makeUser("admin");
    const { page, errors } = await openPage();
    await signIn(page, admin);
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "API keys" }).click();
    await page.waitForURL(e2e.baseUrl + "/api-keys");

    // On a phone each scope's description goes under its name, at the text's full width (it squeezed
    // into a narrow column beside the name before).
    const viewport = page.viewportSize();
    await page.setViewportSize({ width: 390, height: 844 });
    const scope = page.locator("label", { has: page.getByRole("checkbox", { name: /claims:write/ }) });
    const [nameBox, helpBox] = await Promise.all([scope.locator("code").boundingBox(), scope.locator("code + span").boundingBox()]);
    expect(helpBox!.y).toBeGreaterThanOrEqual(nameBox!.y + nameBox!.height - 1);
    expect(helpBox!.width).toBeGreaterThan(200);
    if (viewport) await page.setViewportSize(viewport);

    const name = uniq("ui-key");
    await page.getByLabel("Name", { exact: true }).fill(name);
    await page.getByRole("checkbox", { name: /claims:read/ }).check();
    await page.getByRole("button", { name: "Create API key" }).click();
    const shown = page.getByRole("region", { name: `New API key ${name}` });
    await shown.waitFor();
    expect(await shown.innerText()).toMatch(/shown once/i);
    const key = (await shown.getByTestId("secret-value").innerText()).trim();
    expect(key).toMatch(/^kw_[a-z0-9]{12}_/);
    expect(await keyStatus(key)).not.toBe(401);

    await page.reload();
    const row = page.locator("tr", { hasText: name });
    await row.waitFor();
    expect(await row.innerText()).toContain("claims:read");
    expect(await page.content()).not.toContain(key);

    await row.getByRole("button", { name: `Revoke ${name}` }).click();
    await row.getByRole("button", { name: "Revoke key" }).click();
    await row.getByText("Revoked").waitFor();
    expect(await keyStatus(key)).toBe(401);
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);

  it("lets an admin create a user whose generated password, shown once, signs them in, and disable them, which ends their open page's session", async () => {
    const admin = await makeUser("admin");
    const { page, errors } = await openPage();
    await signIn(page, admin);
    await page.goto(e2e.baseUrl + "/users");
    const username = uniq("new");
    await page.getByLabel("Username", { exact: true }).fill(username);
    await page.getByLabel("Role", { exact: true }).selectOption("operator");
    await page.getByRole("button", { name: "Create user" }).click();
    const shown = page.getByRole("region", { name: `Password for ${username}` });
    await shown.waitFor();
    expect(await shown.innerText()).toMatch(/shown once/i);
    const password = (await shown.getByTestId("secret-value").innerText()).trim();
    expect(password.length).toBeGreaterThanOrEqual(12);
    const row = page.locator("tr", { hasText: username });
    await row.waitFor();
    expect(await row.innerText()).toContain("operator");

    const other = await openPage();
    await signIn(other.page, username, password);
    expect(await other.page.getByRole("banner").innerText()).toContain(username);
    await other.page.goto(e2e.baseUrl + "/?range=24h");
    await other.page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    // What their page asks the server from here on, and what it hears: said when the redirect does not come.
    const polls: string[] = [];
    const started = Date.now();
    const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;
    other.page.on("response", (res) => {
      const url = new URL(res.url());
      if (url.pathname.startsWith("/api/")) polls.push(`+${elapsed()} ${res.status()} ${url.pathname}`);
    });
    other.page.on("requestfailed", (req) => polls.push(`+${elapsed()} failed ${new URL(req.url()).pathname}: ${req.failure()?.errorText}`));

    await row.getByRole("button", { name: `Disable ${username}` }).click();
    await row.getByRole("button", { name: "Disable", exact: true }).click();
    await row.getByText("Disabled").waitFor();
    // Their session ended with the change: the open page's next poll (every 10 s) is refused with 401 and
    // sends them to the sign-in page, which would return them to the page they had open.
    // A poll already in flight delays the next one (react-query starts none while one runs), and an Overview read
    // of the shared test database can take seconds on a loaded 2-core machine: hence 60 s, not 10.
    await other.page.waitForURL(e2e.baseUrl + "/sign-in?next=%2F%3Frange%3D24h", { timeout: 60_000 }).catch((e: unknown) => {
      throw new Error(`no sign-in page ${elapsed()} after the page opened; its API responses:\n${polls.join("\n")}`, { cause: e });
    });
    expect(errors).toEqual([]);
    // Chromium logs the refused poll itself (the 401) as a console error; nothing else may appear.
    expect(other.errors.filter((e) => !/Failed to load resource: .*status of 401/.test(e))).toEqual([]);
  }, 2 * BROWSER_TEST_MS);
});

describe("single sign-on in Chromium", () => {
  let stub: OidcStub | undefined;
  let ssoUrl: string;

  beforeAll(async () => {
    stub = await startOidcStub();
    ssoUrl = await e2e.startAnother(oidcEnv(stub));
  }, 120_000);

  afterAll(async () => {
    await stub?.close();
  });

  it("signs in through the sign-in page's single sign-on button, with the provider's role, back on the page opened", async () => {
    await makeUser("admin");
    const sub = uniq("sub");
    stub!.setIdentity({ sub, email: `${sub}@example.test`, keyward_roles: "operator" });
    const { page, errors } = await openPage();
    // Opened from a link: single sign-on comes back to that page, through the provider and back.
    await page.goto(ssoUrl + "/activity");
    await page.waitForURL(ssoUrl + "/sign-in?next=%2Factivity");
    await page.getByRole("button", { name: "Sign in with Stub IdP" }).click();
    await page.waitForURL(ssoUrl + "/activity");
    const banner = page.getByRole("banner");
    await banner.getByText("operator").waitFor();
    expect(await banner.getByRole("link", { name: "Activity" }).count()).toBe(1);
    expect(await banner.getByRole("link", { name: "Users" }).count()).toBe(0);
    expect(errors).toEqual([]);
  }, BROWSER_TEST_MS);
});
