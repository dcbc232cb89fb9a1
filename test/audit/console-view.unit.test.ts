/** The console's pure audit helpers: filters from the URL, time inputs, labels, key targets, sentences. */
import { describe, expect, it } from "vitest";
import {
  detailSummary,
  filtersFromParams,
  formatInstants,
  isoToLocalInput,
  keyOfTarget,
  kindLabel,
  localInputToIso,
} from "@/components/audit/view";
import { eventPath, exportUrl } from "@/components/audit/queries";
import { isInstant } from "@/lib/format";

describe("audit console helpers", () => {
  it("reads only the known, non-empty filters from a query string", () => {
    const f = filtersFromParams(new URLSearchParams("source=stripe&eventId=%20&kind=released&limit=5&bogus=1"));
    expect(f).toEqual({ source: "stripe", kind: "released" });
    expect(exportUrl(f)).toBe("/api/v1/audit/export?source=stripe&kind=released");
  });

  it("round-trips a datetime-local value through an ISO instant", () => {
    const iso = localInputToIso("2026-12-01T08:30")!;
    expect(iso).toMatch(/Z$/);
    expect(isoToLocalInput(iso)).toBe("2026-12-01T08:30");
    expect(localInputToIso("")).toBeUndefined();
    expect(isoToLocalInput(undefined)).toBe("");
  });

  it("labels known kinds and shows unknown ones as stored", () => {
    expect(kindLabel("reclaimed_after_expiry")).toBe("Reclaimed after expiry");
    expect(kindLabel("some_future_kind")).toBe("some_future_kind");
  });

  it("links an operator action's key target, and nothing else", () => {
    expect(keyOfTarget({ type: "key", id: "stripe/ord/42" })).toEqual({ source: "stripe", eventId: "ord/42" });
    expect(keyOfTarget({ type: "user", id: "alice" })).toBeNull();
    expect(keyOfTarget({ type: "key", id: "stripe/" })).toBeNull();
    expect(keyOfTarget(null)).toBeNull();
  });

  it("encodes event paths, rewrites instants in a sentence, and shortens details", () => {
    expect(eventPath("stripe", "ord/42 x")).toBe("/events/stripe/ord%2F42%20x");
    expect(formatInstants("Processed at 2026-12-01T10:00:00.000Z; key alive until 2026-12-08T10:00:00Z.", () => "T")).toBe(
      "Processed at T; key alive until T.",
    );
    expect(detailSummary({ detail: { expiresAt: "x", n: 1 } })).toBe("expiresAt: x, n: 1");
    expect(detailSummary({ detail: { long: "y".repeat(300) } }, 20)).toHaveLength(20);
    expect(detailSummary({ detail: null })).toBe("");
  });

  it("knows a detail's instant (as PostgreSQL and JavaScript write them) from other strings", () => {
    for (const v of ["2026-12-04T05:41:16.884+00:00", "2026-12-04T05:41:16Z", "2026-12-04T05:41:16.5-05:30"]) expect(isInstant(v), v).toBe(true);
    for (const v of ["2026-12-04", "evt_2026-12-04T05:41:16Z", "2026-13-45T99:99:99Z", "7d", 1733290876000, null]) expect(isInstant(v), String(v)).toBe(false);
  });
});
