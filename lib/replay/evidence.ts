/**
 * An attempt's headers as kept for its evidence (replay_attempts.request_headers / response_headers, shown
 * on the dead-letter page): in order, at most MAX_HEADERS of them, each value at most MAX_VALUE characters,
 * and secrets masked: a signature keeps its scheme and first characters (enough to tell two apart, not
 * to reuse), credentials and cookies are replaced. Pure.
 */
import type { HeaderPair } from "./send";

export const MAX_HEADERS = 64;
export const MAX_VALUE = 512;
export const MASKED = "(masked)";

/** Headers whose whole value is a secret. */
const SECRET = new Set(["authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key"]);

/** Node's rawHeaders ([name, value, name, value, …]) as pairs. */
export function pairsOf(raw: readonly string[]): HeaderPair[] {
  const out: HeaderPair[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([raw[i], raw[i + 1]]);
  return out;
}

/** `v1,AbCdEf… (masked)` for each space-separated signature of a webhook-signature header. */
function maskSignature(value: string): string {
  return value
    .split(" ")
    .filter(Boolean)
    .map((sig) => {
      const comma = sig.indexOf(",");
      const scheme = comma >= 0 ? sig.slice(0, comma + 1) : "";
      return `${scheme}${sig.slice(scheme.length, scheme.length + 6)}… ${MASKED}`;
    })
    .join(" ");
}

export function maskHeaders(headers: readonly HeaderPair[] | Record<string, string>): HeaderPair[] {
  const pairs: HeaderPair[] = Array.isArray(headers) ? [...headers] : Object.entries(headers);
  return pairs.slice(0, MAX_HEADERS).map(([name, value]) => {
    const n = name.toLowerCase();
    const v = SECRET.has(n) ? MASKED : n === "webhook-signature" ? maskSignature(value) : value;
    return [name, v.length > MAX_VALUE ? `${v.slice(0, MAX_VALUE - 1)}…` : v];
  });
}
