/** Which requests the server's claim fast path takes, and which it leaves to Next. */
import { describe, expect, it } from "vitest";
import { matchFastRoute } from "@/lib/server/fast-routes";
import { POST as claim } from "@/app/api/v1/claims/route";
import { POST as batch } from "@/app/api/v1/claims/batch/route";
import { GET as keyState } from "@/app/api/v1/claims/[source]/[eventId]/route";

describe("matchFastRoute", () => {
  it("takes the claim endpoints with the route modules Next serves", () => {
    expect(matchFastRoute("POST", "/api/v1/claims")?.handler).toBe(claim);
    expect(matchFastRoute("POST", "/api/v1/claims/batch?x=1")?.handler).toBe(batch);
    const state = matchFastRoute("GET", "/api/v1/claims/stripe/evt%2F1%20%C3%BC");
    expect(state?.handler).toBe(keyState);
    expect(state?.params).toEqual({ source: "stripe", eventId: "evt/1 ü" });
  });

  it("leaves everything else to Next", () => {
    expect(matchFastRoute("GET", "/api/v1/claims")).toBeNull();
    expect(matchFastRoute("PUT", "/api/v1/claims")).toBeNull();
    expect(matchFastRoute("POST", "/api/v1/claims/")).toBeNull();
    expect(matchFastRoute("POST", "/api/v1/claims/stripe/evt_1")).toBeNull();
    expect(matchFastRoute("GET", "/api/v1/claims/stripe/evt_1/x")).toBeNull();
    expect(matchFastRoute("GET", "/api/v1/claims/stripe/%E0%A4%A")).toBeNull();
    expect(matchFastRoute("GET", "/api/v1/overview")).toBeNull();
    expect(matchFastRoute("GET", "/")).toBeNull();
    expect(matchFastRoute("POST", "/api/v1/claims/__proto__")).toBeNull();
  });
});
