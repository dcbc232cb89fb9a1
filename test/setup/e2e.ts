/**
 * The browser tests' fixture: the real `keyward start` on a port of its own, headless Chromium, console users
 * created as the CLI would, and signing in on the sign-in page as a person would.
 *
 *   const e2e = useConsoleServer({ KEYWARD_REPLAY_WORKER: "true" });   // at the top of a test file
 *   const { page, errors } = await e2e.openPage();
 *   await e2e.signInAs(page, "operator", "Replay");                    // a new operator, on the Replay screen
 *
 * The server runs with KEYWARD_TRUST_PROXY, and every page opened here claims its own client address, so
 * sign-in throttling (per address) never counts one test's sign-ins against another's. An admin exists before the first test (with none, the sign-in page offers the first-run setup
 * instead of its form). Everything started is stopped in afterAll: pages, the browser, then the servers
 * (the file's database is dropped after them, setup-file.ts).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import type { Role } from "@/lib/auth/roles";
import { createUser } from "@/lib/auth/users";
import { launchChromium, openPage } from "./browser";
import { uniq } from "./db";
import { baseEnv, startKeyward, stopServer, type Server } from "./server";

/** Every user made here has this password. */
export const PASSWORD = "correct-horse-battery";

/** The console screens reached from the navigation, and their paths. */
export type Screen = "Audit" | "Notifications" | "Replay" | "Sources";

export type ConsoleServer = {
  /** http://127.0.0.1:<port> of the server (set once beforeAll has run). */
  readonly baseUrl: string;
  readonly browser: Browser;
  /** A fresh browser context and page (no cookies, its own client address) and the errors its pages report. */
  openPage(): Promise<{ page: Page; errors: string[] }>;
  /** A new user of `role` (password PASSWORD), created as the CLI would; returns the username. */
  makeUser(role: Role): Promise<string>;
  /** Signs in on the sign-in page and waits for the Overview. */
  signIn(page: Page, username: string, password?: string): Promise<void>;
  /** A new user of `role` signs in on `page` (opening `screen` first when given, so sign-in returns there); returns the username. */
  signInAs(page: Page, role: Role, screen?: Screen): Promise<string>;
  /** Another `keyward start` on the same database with `env` added (no KEYWARD_TRUST_PROXY); stopped in afterAll. Its base URL. */
  startAnother(env: Record<string, string>): Promise<string>;
};

/** Fills and submits the sign-in form of the page the browser is on, as a person would. */
export async function submitSignIn(page: Page, username: string, password = PASSWORD): Promise<void> {
  await page.getByLabel("Username", { exact: true }).fill(username);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

const SERVER_START_MS = 660_000; // the first file to start a server may wait for the console's build

/** Starts the server and the browser for this test file; `env` is added to the server's environment. */
export function useConsoleServer(env: Record<string, string> = {}): ConsoleServer {
  let baseUrl = "";
  let browser: Browser | undefined;
  const spawned: Server[] = [];
  const contexts: BrowserContext[] = [];

  async function serve(extra: Record<string, string>): Promise<string> {
    return (await startKeyward(Object.assign(baseEnv(), extra), spawned)).baseUrl;
  }

  const fixture: ConsoleServer = {
    get baseUrl() {
      return baseUrl;
    },
    get browser() {
      if (!browser) throw new Error("useConsoleServer: the browser is started in beforeAll");
      return browser;
    },
    openPage: () => openPage(fixture.browser, contexts),
    async makeUser(role) {
      const { user } = await createUser({ username: uniq(role), role, password: PASSWORD }, cliPrincipal());
      return user.username;
    },
    async signIn(page, username, password = PASSWORD) {
      await page.goto(baseUrl + "/sign-in");
      await submitSignIn(page, username, password);
      await page.waitForURL(baseUrl + "/");
    },
    async signInAs(page, role, screen) {
      const username = await fixture.makeUser(role);
      if (!screen) {
        await fixture.signIn(page, username);
        return username;
      }
      // As from a link: the screen sends them to sign in, which returns them there (lib/auth/return-to.ts).
      const url = `${baseUrl}/${screen.toLowerCase()}`;
      await page.goto(url);
      await page.waitForURL(`${baseUrl}/sign-in?next=${encodeURIComponent(`/${screen.toLowerCase()}`)}`);
      await submitSignIn(page, username);
      await page.waitForURL(url);
      return username;
    },
    startAnother: (extra) => serve(extra),
  };

  beforeAll(async () => {
    baseUrl = await serve({ KEYWARD_TRUST_PROXY: "true", ...env });
    browser = await launchChromium();
    await fixture.makeUser("admin");
  }, SERVER_START_MS);

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
    for (const s of spawned) await stopServer(s);
  }, 30_000);

  return fixture;
}
