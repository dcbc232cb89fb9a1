import { describe, expect, it, vi } from "vitest";
import { processGlobal } from "@/lib/process-global";
import { uniq } from "./setup/db";

describe("processGlobal", () => {
  it("creates a value once per name and hands the same one to every caller", () => {
    const name = uniq("pg");
    const create = vi.fn(() => ({ n: 1 }));
    const a = processGlobal(name, create);
    const b = processGlobal(name, create);
    expect(b).toBe(a);
    expect(create).toHaveBeenCalledTimes(1);
    expect(processGlobal(uniq("pg"), () => ({ n: 2 }))).not.toBe(a);
  });

  it("keeps a falsy value rather than creating it again", () => {
    const name = uniq("pg");
    expect(processGlobal(name, () => 0)).toBe(0);
    expect(processGlobal(name, () => 1)).toBe(0);
  });

  it("is shared by two copies of one module (Next's route bundles, dev reloads)", async () => {
    vi.resetModules();
    const first = await import("@/lib/db/client");
    vi.resetModules();
    const second = await import("@/lib/db/client");
    expect(second).not.toBe(first); // two module instances…
    const pool = first.pool();
    expect(second.pool()).toBe(pool); // …one pool
    await second.closeDb(); // closed through one copy: the other sees it gone and opens a new one
    const reopened = first.pool();
    expect(reopened).not.toBe(pool);
    expect(second.pool()).toBe(reopened);
    await first.closeDb();
  });

  it("is the only process-wide state: everything sits under globalThis.__keyward", async () => {
    await Promise.all([
      import("@/lib/auth/auth"),
      import("@/lib/metrics/prometheus"),
      import("@/lib/metrics/claim-counts"),
      import("@/lib/claims/mode").then((m) => m.forgetDedupMode()),
      import("@/lib/db/sql").then((m) => m.namedStatements()),
    ]);
    expect(Object.keys(globalThis).filter((k) => k.startsWith("__keyward"))).toEqual(["__keyward"]);
    expect(Object.keys(globalThis.__keyward ?? {})).toEqual(
      expect.arrayContaining(["auth", "claimCounts", "db", "dedupMode", "namedStatements", "prometheus", "unavailableLog"]),
    );
  });
});
