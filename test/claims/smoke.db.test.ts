import { describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { makeSource, uniq } from "@/test/setup/db";

describe("claimEvent", () => {
  it("claims once, then reports a duplicate", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    const first = await claimEvent({ source, eventId, eventType: "charge" });
    const second = await claimEvent({ source, eventId, eventType: "charge" });
    expect(first.outcome).toBe("claimed");
    expect(second.outcome).toBe("duplicate");
    expect(second.duplicateCount).toBe(1);
  });
});
