/** The preflight's readiness checks (lib/replay/readiness.ts readinessChecks, pure) and the reachability probe against real sockets. */
import net from "node:net";
import { describe, expect, it } from "vitest";
import { isReady, readinessChecks, type ReadinessFacts } from "@/lib/replay/readiness";
import { probeDestination, probeTarget } from "@/lib/replay/reachability";

const facts = (over: Partial<ReadinessFacts> = {}): ReadinessFacts => ({
  source: "orders",
  canStart: true,
  isAdmin: false,
  destination: "https://hooks.example.com/in",
  secret: "ok",
  probe: { ok: true, host: "hooks.example.com", port: 443, steps: [{ step: "dns", ok: true, detail: "resolves", ms: 1 }] },
  ...over,
});
const byCheck = (f: ReadinessFacts) => Object.fromEntries(readinessChecks(f).map((c) => [c.check, c]));

describe("readinessChecks", () => {
  it("passes everything when Start would accept", () => {
    const checks = readinessChecks(facts());
    expect(checks.map((c) => [c.check, c.state])).toEqual([
      ["permission", "pass"],
      ["destination", "pass"],
      ["signing_secret", "pass"],
      ["reachable", "pass"],
    ]);
    expect(isReady(checks)).toBe(true);
  });

  it("a missing secret blocks, names Start's 409 and the admin action with its link; an operator is told they cannot set it", () => {
    const c = byCheck(facts({ secret: "missing" }));
    expect(c.signing_secret).toMatchObject({ state: "fail", blocksStart: true, fix: { who: "an admin", href: "/sources#replay-target-orders" } });
    expect(c.signing_secret.detail).toContain("409 signing_secret_missing");
    expect(c.signing_secret.fix!.action).toMatch(/Generate signing secret.*POST \/api\/v1\/sources\/orders\/signing-secret.*Operators cannot set secrets\./);
    expect(isReady(readinessChecks(facts({ secret: "missing" })))).toBe(false);
    // An admin is told it is theirs to do.
    expect(byCheck(facts({ secret: "unreadable", isAdmin: true })).signing_secret.fix!.who).toBe("you (admin)");
  });

  it("a missing destination blocks (and there is nothing to probe); no permission blocks", () => {
    const c = byCheck(facts({ destination: null, probe: null }));
    expect(c.destination).toMatchObject({ state: "fail", blocksStart: true });
    expect(c.reachable).toBeUndefined();
    expect(byCheck(facts({ canStart: false })).permission).toMatchObject({ state: "fail", fix: { who: "an admin", href: "/users" } });
  });

  it("an unreachable destination warns without blocking, and says who fixes which step", () => {
    const down = facts({ probe: { ok: false, host: "h", port: 8443, steps: [{ step: "dns", ok: true, detail: "ok", ms: 1 }, { step: "connect", ok: false, detail: "ECONNREFUSED", ms: 1 }] } });
    expect(byCheck(down).reachable).toMatchObject({ state: "warn", blocksStart: false, fix: { who: "the destination's owner" } });
    expect(byCheck(down).reachable.fix!.action).toContain("Nothing accepts connections at h:8443");
    expect(isReady(readinessChecks(down))).toBe(true);
  });
});

describe("probeDestination (real sockets)", () => {
  it("reads ports by scheme", () => {
    expect(probeTarget("https://a.example/x")).toEqual({ host: "a.example", port: 443, tls: true });
    expect(probeTarget("amqp://u:p@rabbit:5673/v")).toEqual({ host: "rabbit", port: 5673, tls: false });
    expect(probeTarget("nats://n")).toEqual({ host: "n", port: 4222, tls: false });
    expect(probeTarget("not a url")).toBeNull();
  });

  it("passes DNS and connect against a listening port; reports a refused connect and a failed TLS handshake", async () => {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((s) => {
      sockets.add(s);
      s.on("error", () => {}); // the probe closes its side at once
      s.end("not tls\r\n");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const up = await probeDestination(`http://localhost:${port}/in`);
      expect(up.ok).toBe(true);
      expect(up.steps.map((s) => s.step)).toEqual(["dns", "connect"]);
      const tls = await probeDestination(`https://127.0.0.1:${port}/in`, 2000);
      expect(tls.ok).toBe(false);
      expect(tls.steps.map((s) => [s.step, s.ok])).toEqual([["dns", true], ["connect", true], ["tls", false]]);
      expect(tls.steps[2].detail).toContain("wrong version number");
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
    const refused = await probeDestination(`http://127.0.0.1:${port}/in`);
    expect(refused.steps.at(-1)).toMatchObject({ step: "connect", ok: false });
    expect(refused.steps.at(-1)!.detail).toContain("ECONNREFUSED");
    const dns = await probeDestination("http://no-such-host.invalid/x");
    expect(dns.steps).toMatchObject([{ step: "dns", ok: false }]);
  });
});
