/** What the charts' source picker offers for what has been typed (components/overview/source-picker.ts). */
import { describe, expect, it } from "vitest";
import { namesMatching } from "@/components/overview/source-picker";

const names = ["billing", "github", "github-enterprise", "my-github-app", "shopify", "stripe"];

describe("namesMatching", () => {
  it("offers the first names and counts the rest when nothing is typed", () => {
    expect(namesMatching(names, "", 4)).toEqual({ shown: ["billing", "github", "github-enterprise", "my-github-app"], more: 2 });
    expect(namesMatching(names, "   ", 10)).toEqual({ shown: names, more: 0 });
  });

  it("matches part of a name in any case, names that start with it first, each group in the given order", () => {
    expect(namesMatching(names, "GitHub")).toEqual({ shown: ["github", "github-enterprise", "my-github-app"], more: 0 });
    expect(namesMatching(names, "i")).toEqual({ shown: ["billing", "github", "github-enterprise", "my-github-app", "shopify", "stripe"], more: 0 });
    expect(namesMatching(names, "p")).toEqual({ shown: ["github-enterprise", "my-github-app", "shopify", "stripe"], more: 0 });
  });

  it("shows at most max matches, starting ones first, and counts the others", () => {
    expect(namesMatching(names, "git", 2)).toEqual({ shown: ["github", "github-enterprise"], more: 1 });
    expect(namesMatching(names, "S", 1)).toEqual({ shown: ["shopify"], more: 2 }); // starting with it: shopify, stripe
    expect(namesMatching(names, "nothing-like-it")).toEqual({ shown: [], more: 0 });
  });

  it("finds the names among thousands, 50 at most", () => {
    const many = Array.from({ length: 6000 }, (_, i) => `source-${String(i).padStart(4, "0")}`);
    const { shown, more } = namesMatching(many, "SOURCE-59");
    expect(shown).toEqual(Array.from({ length: 50 }, (_, i) => `source-${5900 + i}`));
    expect(more).toBe(50);
  });
});
