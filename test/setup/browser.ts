/** Headless Chromium for the end-to-end tests, and signing a browser context in as a console user. */
import { randomInt } from "node:crypto";
import { existsSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type BrowserServer, type Page } from "playwright-core";
import { inject } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { createUser } from "@/lib/auth/users";
import { uniq } from "./db";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

const ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

function executablePath(): string {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM}: install Debian's package (apt-get install chromium) or set CHROMIUM_PATH`);
  }
  return CHROMIUM;
}

/** Debian's Chromium, headless, as a server test files connect to (chromium-server.ts, the e2e tier's set-up). */
export function launchChromiumServer(): Promise<BrowserServer> {
  return chromium.launchServer({ executablePath: executablePath(), args: ARGS });
}

/**
 * The e2e tier's shared Chromium (its `close()` disconnects this file and closes the contexts it opened), or,
 * outside that tier, a browser of the caller's own; Playwright gives every launch a fresh, temporary profile.
 */
export async function launchChromium(): Promise<Browser> {
  const endpoint = inject("chromiumEndpoint");
  return endpoint ? chromium.connect(endpoint) : chromium.launch({ executablePath: executablePath(), args: ARGS });
}

/**
 * A browser context signed in as a new viewer: the sign-in goes through POST /api/v1/session from the
 * console's own origin, and the session cookie lands in the context's cookie jar.
 */
export async function signedInContext(browser: Browser, baseUrl: string): Promise<BrowserContext> {
  const username = uniq("viewer");
  const password = `pw-${uniq("secret")}-long`;
  await createUser({ username, role: "viewer", password }, cliPrincipal());
  const context = await browser.newContext();
  const res = await context.request.post(`${baseUrl}/api/v1/session`, {
    data: { username, password },
    headers: { origin: baseUrl },
  });
  if (!res.ok()) throw new Error(`sign-in failed: ${res.status()} ${await res.text()}`);
  return context;
}

/**
 * A fresh browser context (no cookies, its own X-Forwarded-For so sign-in throttling per address never
 * couples tests; the server must run with KEYWARD_TRUST_PROXY) and the errors its pages report: console
 * errors and uncaught exceptions (a CSP violation is one). The context is added to `contexts` for closing.
 */
export async function openPage(browser: Browser, contexts: BrowserContext[]): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({
    extraHTTPHeaders: { "x-forwarded-for": `198.18.${randomInt(256)}.${randomInt(1, 255)}` },
  });
  contexts.push(context);
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // With the resource's address: "Failed to load resource: … 404" alone does not say which one.
  page.on("console", (m) => m.type() === "error" && errors.push(m.location().url ? `${m.text()} (${m.location().url})` : m.text()));
  return { page, errors };
}
