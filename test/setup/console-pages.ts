/**
 * Every console page, the sizes and themes it is checked at, and the layout checks (issue 23 "Finish"),
 * shared by the browser test (test/e2e/every-page.e2e.test.ts) and `npm run screenshots`
 * (scripts/screenshots.ts). Both run against the demo's data (lib/demo/seed.ts), signed in as its admin,
 * so every page has something realistic on it: long identifiers, many rows, a finished replay.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";

export const VIEWPORTS = [
  { name: "desktop", width: 1440, height: 900 },
  { name: "phone", width: 390, height: 844 },
] as const;
export const SCHEMES = ["light", "dark"] as const;

export type Viewport = (typeof VIEWPORTS)[number];
export type Scheme = (typeof SCHEMES)[number];
export type ConsolePage = { name: string; path: string; signedIn: boolean };

/** The demo's admin (lib/demo/seed.ts DEMO_USER); repeated here so the screenshot script needs no server code. */
export const DEMO_ADMIN = { username: "demo", password: "keyward-demo" };

/** A browser context at `viewport` in `scheme`, its own client address (sign-in throttling is per address). */
export async function contextAt(browser: Browser, viewport: Viewport, scheme: Scheme): Promise<BrowserContext> {
  return browser.newContext({
    viewport: { width: viewport.width, height: viewport.height },
    colorScheme: scheme,
    extraHTTPHeaders: { "x-forwarded-for": `198.19.${Math.floor(Math.random() * 256)}.${1 + Math.floor(Math.random() * 254)}` },
  });
}

/** Signs `context` in through the API as the console does (the cookie lands in its jar). */
export async function signInContext(context: BrowserContext, baseUrl: string, user = DEMO_ADMIN): Promise<void> {
  const res = await context.request.post(`${baseUrl}/api/v1/session`, { data: user, headers: { origin: baseUrl } });
  if (!res.ok()) throw new Error(`sign-in failed: ${res.status()} ${await res.text()}`);
}

/**
 * Every page of the console, the pages of one thing each pointing at the demo's own: the orders source, an
 * event of it that was processed twice, a dead letter, the finished replay. `context` must be signed in.
 */
export async function consolePages(context: BrowserContext, baseUrl: string): Promise<ConsolePage[]> {
  const get = async <T>(p: string): Promise<T> => {
    const res = await context.request.get(baseUrl + p);
    if (!res.ok()) throw new Error(`GET ${p}: ${res.status()} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const late = await get<{ items: { eventId: string }[] }>("/api/v1/sources/orders/late-duplicates?limit=1");
  const letters = await get<{ items: { id: string }[] }>("/api/v1/dead-letters");
  const replays = await get<{ items: { id: string }[] }>("/api/v1/replays");
  const [event, letter, replay] = [late.items[0]?.eventId, letters.items[0]?.id, replays.items[0]?.id];
  if (!event || !letter || !replay) throw new Error("the demo data has no late duplicate, dead letter or replay");
  const page = (name: string, path: string, signedIn = true): ConsolePage => ({ name, path, signedIn });
  return [
    page("sign-in", "/sign-in", false),
    page("overview", "/"),
    page("sources", "/sources"),
    page("source", "/sources/orders"),
    page("audit", "/audit"),
    page("event", `/events/orders/${encodeURIComponent(event)}`),
    page("replay", "/replay"),
    page("replay-detail", `/replays/${replay}`),
    page("dead-letter", `/dead-letters/${letter}`),
    page("activity", "/activity"),
    page("notifications", "/notifications"),
    page("users", "/users"),
    page("api-keys", "/api-keys"),
  ];
}

/** Opens `path` and waits until its queries have answered (no request for a moment, nothing marked busy). */
export async function openSettled(page: Page, url: string): Promise<void> {
  await page.goto(url, { waitUntil: "networkidle" });
  await page.waitForFunction(() => document.querySelectorAll('[aria-busy="true"]').length === 0, undefined, { timeout: 60_000 });
  await page.evaluate(() => document.fonts.ready);
  // Charts draw after their container is measured: one more frame.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

/**
 * What is wrong with the page's layout and labels, as sentences (empty when nothing is):
 * - the page scrolls sideways (document wider than the window);
 * - at the desktop size, a table that does not fit its card (its last columns cut off until scrolled);
 * - a control whose accessible name does not contain its visible label (WCAG 2.5.3 "Label in Name"):
 *   a link or button named by aria-label/aria-labelledby, or a field whose aria-label overrides its <label>.
 */
export async function layoutProblems(page: Page, viewport: Viewport): Promise<string[]> {
  // Sent as source text with a stand-in for __name, the helper tsx's transpiler wraps named functions in
  // (it exists in this process, not in the page).
  return page.evaluate(`(() => { const __name = (f) => f; return (${inPageChecks.toString()})(${viewport.name === "desktop"}); })()`);
}

/** The checks, run in the page. */
function inPageChecks(desktop: boolean): string[] {
    const problems: string[] = [];
    // Compared as speech recognition hears them: case, punctuation and symbols ignored.
    const norm = (s: string | null | undefined) =>
      (s ?? "").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, " ").trim();
    /** The text a sighted person sees in `el`: no text of form controls in it, none visually hidden. */
    const seenText = (el: Element) => {
      let out = "";
      const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const parent = n.parentElement;
        if (!parent || parent.closest("select, option, input, textarea, [aria-hidden=true]")) continue;
        const r = parent.getBoundingClientRect();
        if (r.width <= 1 && r.height <= 1) continue;
        out += ` ${n.textContent ?? ""}`;
      }
      return norm(out);
    };
    const describe = (el: Element) => {
      const text = norm((el as HTMLElement).innerText).slice(0, 60);
      return `<${el.tagName.toLowerCase()}${el.className && typeof el.className === "string" ? ` class="${el.className}"` : ""}>${text ? ` "${text}"` : ""}`;
    };
    const { scrollWidth } = document.documentElement;
    if (scrollWidth > window.innerWidth) {
      // Name the widest culprits: elements whose right edge is past the window and not inside a scroller.
      const culprits: string[] = [];
      for (const el of document.body.querySelectorAll("*")) {
        const r = el.getBoundingClientRect();
        if (r.right <= window.innerWidth + 0.5 || r.width === 0) continue;
        let scroller = el.parentElement;
        let inScroller = false;
        while (scroller && scroller !== document.body) {
          const ox = getComputedStyle(scroller).overflowX;
          if (ox === "auto" || ox === "scroll" || ox === "hidden" || ox === "clip") {
            inScroller = true;
            break;
          }
          scroller = scroller.parentElement;
        }
        if (!inScroller && culprits.length < 3) culprits.push(`${describe(el)} right edge ${Math.round(r.right)}`);
      }
      problems.push(`the page is ${scrollWidth} px wide in a ${window.innerWidth} px window: ${culprits.join("; ")}`);
    }
    if (desktop) {
      for (const table of document.querySelectorAll("table")) {
        const frame = table.parentElement!;
        if (!table.checkVisibility()) continue;
        if (frame.scrollWidth > frame.clientWidth + 1) {
          const caption = norm(table.caption?.textContent) || describe(table);
          problems.push(`table "${caption}" is ${frame.scrollWidth} px wide in its ${frame.clientWidth} px card: its last columns are cut off`);
        }
      }
    }
    // Identifiers are readable: a link set in monospace (an event id, a source, a key) is not underlined
    // (an underline hides underscores: "ord_29lm_ZN1ac7" reads "ord 29lm ZN1ac7"). Not hovered here.
    let underlined = 0;
    for (const a of document.querySelectorAll("a")) {
      const style = getComputedStyle(a);
      if (/mono/i.test(style.fontFamily) && style.textDecorationLine.includes("underline") && a.checkVisibility()) {
        if (underlined++ < 3) problems.push(`${describe(a)} is an identifier link underlined (the underline hides underscores)`);
      }
    }
    const nameOf = (el: Element): string | null => {
      const by = el.getAttribute("aria-labelledby");
      if (by) return by.split(/\s+/).map((id) => document.getElementById(id)?.textContent ?? "").join(" ");
      return el.getAttribute("aria-label");
    };
    for (const el of document.querySelectorAll("a, button, summary, [role=button], [role=link], [role=tab], [role=menuitem]")) {
      const name = nameOf(el);
      if (name === null || !el.checkVisibility()) continue;
      const visible = seenText(el);
      if (visible && !norm(name).includes(visible)) problems.push(`${describe(el)} is announced as "${name}", which does not contain its visible label`);
    }
    for (const el of document.querySelectorAll("input[aria-label], select[aria-label], textarea[aria-label]")) {
      const labels = (el as HTMLInputElement).labels;
      if (!labels || !el.checkVisibility()) continue;
      for (const label of labels) {
        const visible = seenText(label);
        const name = el.getAttribute("aria-label");
        if (visible && label.checkVisibility() && !norm(name).includes(visible)) {
          problems.push(`a field labelled "${visible}" is announced as "${name}"`);
        }
      }
    }
    return problems;
}
