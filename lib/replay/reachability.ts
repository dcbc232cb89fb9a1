/**
 * Whether a replay destination can be reached right now, step by step as a delivery would reach it: the
 * host name resolves (DNS), a TCP connection opens, and (https, amqps, bullmqs) the TLS handshake
 * completes with a certificate the sender would accept (the same default verification as send-http.ts's
 * https agent). Nothing is sent: no request, no message. Each step has its own timeout; the first failure
 * ends the probe. Used by the preflight's readiness checks (readiness.ts).
 */
import "server-only";
import dns from "node:dns/promises";
import net from "node:net";
import tls from "node:tls";

export type ProbeStep = { step: "dns" | "connect" | "tls"; ok: boolean; detail: string; ms: number };
export type Probe = { ok: boolean; host: string; port: number; steps: ProbeStep[] };

/** Default ports by scheme (what the senders use when the URL names none). */
const PORTS: Record<string, number> = { "http:": 80, "https:": 443, "amqp:": 5672, "amqps:": 5671, "bullmq:": 6379, "bullmqs:": 6379, "nats:": 4222 };
const TLS_SCHEMES = new Set(["https:", "amqps:", "bullmqs:"]);

export const PROBE_STEP_TIMEOUT_MS = 3000;

/** Where a destination URL points: host, port, and whether the sender speaks TLS to it; null when it does not parse. */
export function probeTarget(destination: string): { host: string; port: number; tls: boolean } | null {
  let url: URL;
  try {
    url = new URL(destination);
  } catch {
    return null;
  }
  const port = url.port ? Number(url.port) : PORTS[url.protocol.toLowerCase()];
  if (!port || !url.hostname) return null;
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port, tls: TLS_SCHEMES.has(url.protocol.toLowerCase()) };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms))),
  ]);
}

/** An error in one line: its code and message (OpenSSL's internals left out). */
const errText = (err: unknown) => {
  const e = err as NodeJS.ErrnoException;
  const message = (/routines:[^:]*:([^:]+)/.exec(e.message)?.[1] ?? e.message.split("\n")[0]).trim();
  return (e.code && !message.includes(e.code) ? `${e.code}: ${message}` : message).slice(0, 300);
};

/** Probes `destination` (DNS, connect, TLS); never throws. */
export async function probeDestination(destination: string, stepTimeoutMs = PROBE_STEP_TIMEOUT_MS): Promise<Probe> {
  const target = probeTarget(destination);
  if (!target) return { ok: false, host: "", port: 0, steps: [{ step: "dns", ok: false, detail: "the destination is not a URL with a host", ms: 0 }] };
  const steps: ProbeStep[] = [];
  const done = (ok: boolean) => ({ ok, host: target.host, port: target.port, steps });
  const timed = async (step: ProbeStep["step"], run: () => Promise<string>): Promise<boolean> => {
    const t = performance.now();
    try {
      const detail = await withTimeout(run(), stepTimeoutMs, step === "dns" ? "DNS" : step === "tls" ? "TLS handshake" : "TCP connect");
      steps.push({ step, ok: true, detail, ms: Math.round(performance.now() - t) });
      return true;
    } catch (err) {
      steps.push({ step, ok: false, detail: errText(err), ms: Math.round(performance.now() - t) });
      return false;
    }
  };

  let address = target.host;
  const resolved = await timed("dns", async () => {
    if (net.isIP(target.host)) return `${target.host} is an address`;
    const a = await dns.lookup(target.host);
    address = a.address;
    return `${target.host} resolves to ${a.address}`;
  });
  if (!resolved) return done(false);

  const connected = await timed(
    "connect",
    () =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect({ host: address, port: target.port });
        socket.once("connect", () => {
          socket.destroy();
          resolve(`TCP connection to ${address}:${target.port} opened`);
        });
        socket.once("error", (err) => {
          socket.destroy();
          reject(err);
        });
        socket.setTimeout(stepTimeoutMs, () => socket.destroy(new Error(`TCP connect: no answer within ${stepTimeoutMs} ms`)));
      }),
  );
  if (!connected || !target.tls) return done(connected);

  const handshake = await timed(
    "tls",
    () =>
      new Promise<string>((resolve, reject) => {
        const socket = tls.connect({ host: address, port: target.port, servername: net.isIP(target.host) ? undefined : target.host });
        socket.once("secureConnect", () => {
          const protocol = socket.getProtocol();
          socket.destroy();
          resolve(`TLS handshake completed (${protocol ?? "TLS"}, certificate accepted)`);
        });
        socket.once("error", (err) => {
          socket.destroy();
          reject(err);
        });
        socket.setTimeout(stepTimeoutMs, () => socket.destroy(new Error(`TLS handshake: no answer within ${stepTimeoutMs} ms`)));
      }),
  );
  return done(handshake);
}
