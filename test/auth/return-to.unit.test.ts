/**
 * Where signing in (and the "database unreachable" page) returns to: only a page of this console, whatever
 * the `?next=` a link or an attacker put there (lib/auth/return-to.ts). The browser tests follow it end to
 * end (test/e2e/console.e2e.test.ts, test/db/faults.e2e.test.ts).
 */
import { describe, expect, it } from "vitest";
import { safeReturnTo, signInPath, ssoReturnTo, unavailablePath } from "@/lib/auth/return-to";

describe("safeReturnTo", () => {
  it("keeps a console page with its query and fragment", () => {
    for (const page of ["/replay/2f1c?tab=items", "/events/stripe/evt_1#history", "/sources", "/audit?source=a%20b&q=x", "/events/gh/evt%2F1"]) {
      expect(safeReturnTo(page)).toBe(page);
    }
    expect(safeReturnTo("/sources/../replays")).toBe("/replays"); // normalized as the browser would
    expect(safeReturnTo("/replay?_rsc=1x9&tab=items")).toBe("/replay?tab=items"); // a client navigation's marker is not the page
    // Non-ASCII and 18-digit ids: as the request line carries them (percent-encoded), or encoded if given raw.
    expect(safeReturnTo("/events/shop/%C3%A9v%C3%A9nement-123456789012345678")).toBe("/events/shop/%C3%A9v%C3%A9nement-123456789012345678");
    expect(safeReturnTo("/events/shop/événement?q=日本")).toBe("/events/shop/%C3%A9v%C3%A9nement?q=%E6%97%A5%E6%9C%AC");
  });

  it("returns to the Overview for anything that could leave this console or is not a page", () => {
    const hostile = [
      "//evil.example/x",
      "/\\evil.example",
      "/\t/evil.example",
      "/\n/evil.example",
      "https://evil.example/",
      "javascript:alert(1)",
      "evil.example",
      "",
      " /sources",
      "/sign-in?next=/sources",
      "/sign-in",
      "/unavailable",
      "/api/v1/claims",
      "/_next/static/x.js",
      "/" + "a".repeat(3000),
      ["/sources"],
      undefined,
      null,
      42,
    ];
    for (const raw of hostile) expect(safeReturnTo(raw), JSON.stringify(raw)).toBe("/");
  });
});

describe("the pages that return", () => {
  it("name the page to return to, encoded, and nothing for the Overview", () => {
    expect(signInPath("/replay/2f1c?tab=items")).toBe("/sign-in?next=%2Freplay%2F2f1c%3Ftab%3Ditems");
    expect(new URLSearchParams(signInPath("/a?b=c&d=e").split("?")[1]).get("next")).toBe("/a?b=c&d=e");
    expect(signInPath("/")).toBe("/sign-in");
    expect(signInPath("//evil.example")).toBe("/sign-in");
    expect(unavailablePath("/sources")).toBe("/unavailable?next=%2Fsources");
    expect(unavailablePath("/sign-in?next=%2Fsources")).toBe("/unavailable");
  });

  it("single sign-on returns to the page unless its path holds an encoded separator, which better-auth refuses", () => {
    expect(ssoReturnTo("/replay/2f1c?tab=items")).toBe("/replay/2f1c?tab=items");
    expect(ssoReturnTo("/events/gh/evt?x=%2F")).toBe("/events/gh/evt?x=%2F");
    expect(ssoReturnTo("/events/gh/evt%2F1")).toBe("/");
    expect(ssoReturnTo("/events/gh/evt%5c1")).toBe("/");
    expect(ssoReturnTo("//evil.example")).toBe("/");
  });
});
