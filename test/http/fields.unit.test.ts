/** The shared field rules (lib/http/fields.ts): what PostgreSQL can store, and which instants are real. */
import { describe, expect, it } from "vitest";
import { instant, isInstant, storableRepresentation, storableText, unstorableReason } from "@/lib/http/fields";
import { auditCursor } from "@/lib/audit/schema";
import { eventId } from "@/lib/claims/schema";
import { encodeCursor } from "@/lib/pagination";

describe("storable text", () => {
  it("refuses NUL and lone surrogates, keeps everything else (pairs, emoji, combining marks, RTL marks)", () => {
    expect(unstorableReason("a\u0000b")).toMatch(/NUL/);
    for (const s of ["\ud800", "x\udfff", "\udbff\ud800", "a\ud83d"]) expect(unstorableReason(s), JSON.stringify(s)).toMatch(/surrogate/);
    for (const s of ["", "plain", "😀", "e\u0301", "\u202e", "\t\n", "\uffff"]) expect(unstorableReason(s), JSON.stringify(s)).toBeNull();
    const schema = storableText().min(1).max(10);
    expect(schema.safeParse("ok").success).toBe(true);
    expect(schema.safeParse("a\u0000").error?.issues.map((i) => i.message)).toEqual(["must not contain NUL characters"]);
  });

  it("represents unstorable text unambiguously as JSON escapes", () => {
    expect(storableRepresentation("adm\u0000in\ud800😀")).toBe("adm\\u0000in\\ud800😀");
    expect(unstorableReason(storableRepresentation("\u0000\udfff\u0007"))).toBeNull();
  });
});

describe("instants", () => {
  it("accept real ISO 8601 times from 0001 to 9999 and refuse impossible days and year 0", () => {
    for (const ok of ["2026-12-01T00:00:00Z", "2024-02-29T12:00:00.123456Z", "2026-12-01T00:00:00+05:30", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"]) {
      expect(isInstant(ok), ok).toBe(true);
    }
    for (const bad of ["2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "2026-12-01", "yesterday", "+275760-09-13T00:00:00Z"]) {
      expect(isInstant(bad), bad).toBe(false);
    }
    expect(instant.safeParse("0000-01-01T00:00:00Z").error?.issues[0].message).toMatch(/0001-01-01/);
  });

  it("audit cursors carry a real instant and an id that fits a bigint", () => {
    const cursor = (at: string, id: string) => encodeCursor({ at, id });
    expect(auditCursor.safeParse(cursor("2026-12-01T00:00:00.123456Z", "42")).data).toEqual({ at: "2026-12-01T00:00:00.123456Z", id: "42" });
    for (const [at, id] of [["2026-02-30T00:00:00Z", "1"], ["0000-01-01T00:00:00Z", "1"], ["2026-12-01T00:00:00Z", "9999999999999999999"], ["x", "1"]]) {
      expect(auditCursor.safeParse(cursor(at, id)).success, `${at} ${id}`).toBe(false);
    }
    // The plain "<at>_<id>" text of earlier versions is not a cursor.
    expect(auditCursor.safeParse("2026-12-01T00:00:00.123456Z_42").success).toBe(false);
  });
});

describe("event ids", () => {
  it("refuse blank ids with one message, keep ids with inner spaces", () => {
    for (const blank of [" ", "   ", "\u00a0\u3000"]) {
      expect(eventId.safeParse(blank).error?.issues.map((i) => i.message), JSON.stringify(blank)).toEqual(["must not be blank (only whitespace)"]);
    }
    expect(eventId.safeParse(" evt 1 ").success).toBe(true);
  });
});
