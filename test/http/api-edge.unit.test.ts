/** The API edge's decisions (lib/server/api-edge.ts), as pure functions; test/http/fuzz.system.test.ts drives them over HTTP. */
import { describe, expect, it } from "vitest";
import { apiPathProblem, isApiPath, malformedSegment } from "@/lib/server/api-edge";

describe("the API edge", () => {
  it("knows API paths from console pages", () => {
    for (const p of ["/api", "/api/", "/api?x=1", "/api/v1/claims"]) expect(isApiPath(p), p).toBe(true);
    for (const p of ["/", "/apis", "/api-keys", "/audit?api=1"]) expect(isApiPath(p), p).toBe(false);
  });

  it("refuses a segment that is not percent-encoded UTF-8 (400), whatever the query holds", () => {
    for (const bad of ["%ZZ", "%C0%AE", "%ED%A0%80", "%", "%E0%A4%A"]) {
      expect(malformedSegment(`/api/v1/users/${bad}`), bad).toBe(4);
      expect(apiPathProblem(`/api/v1/users/${bad}`)).toMatchObject({ status: 400, code: "malformed_path" });
    }
    expect(apiPathProblem("/api/v1/audit?actor=%ZZ")).toBeNull();
    expect(apiPathProblem("/api/v1/claims/src/%F0%9F%92%A9%00")).toBeNull(); // valid UTF-8; the NUL is route()'s to refuse
  });

  it("answers a trailing slash or an empty segment with a 404 naming the path to use", () => {
    for (const p of ["/api/v1/claims/", "/api//v1/claims", "/api/"]) {
      expect(apiPathProblem(p), p).toMatchObject({ status: 404, code: "not_found" });
    }
    expect(apiPathProblem("/api/v1/claims/")?.message).toContain("/api/v1/claims ");
    expect(apiPathProblem("/api/v1/claims")).toBeNull();
  });
});
