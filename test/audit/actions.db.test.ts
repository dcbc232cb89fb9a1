/** The operator action log's listing: newest first, keyset pages that neither skip nor repeat, bad cursors are 422. */
import { describe, expect, it } from "vitest";
import { listActions, listActionsQuery, recordAction } from "@/lib/audit/actions";
import { parseInput } from "@/lib/http/validate";
import { uniq } from "@/test/setup/db";

describe("listActions", () => {
  it("pages through one actor's actions newest first, each exactly once", async () => {
    const actor = `cli:${uniq("pager")}`;
    for (let i = 0; i < 7; i++) await recordAction(actor, { action: "test.step", target: { type: "step", id: String(i) } });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const r = await listActions(parseInput(listActionsQuery, { actor, limit: "3", ...(cursor ? { cursor } : {}) }));
      seen.push(...r.items.map((a) => a.target!.id));
      if (!r.next) break;
      cursor = r.next;
    }
    expect(seen).toEqual(["6", "5", "4", "3", "2", "1", "0"]);
  });

  it("refuses a malformed or impossible cursor and an out-of-range limit with 422", () => {
    const forged = Buffer.from(JSON.stringify({ at: "2026-13-45T99:99:99.000Z", id: "1" })).toString("base64url");
    for (const bad of [{ cursor: "yesterday" }, { cursor: forged }, { before: "2026-12-01T00:00:00.000Z_1" }, { limit: "0" }, { limit: "501" }]) {
      expect(() => parseInput(listActionsQuery, bad)).toThrow(expect.objectContaining({ status: 422 }));
    }
  });
});
