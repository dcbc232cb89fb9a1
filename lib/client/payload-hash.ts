/**
 * Payload hashes for the claim's `payloadHash` (README "Payload hashes"): SHA-256, 64 lowercase hex, of
 *   - the raw bytes: a request body exactly as received (`payloadHash: "body"`), or the Uint8Array,
 *     ArrayBuffer or string (its UTF-8 bytes) a `payload` function returns;
 *   - canonical JSON: any other value (`payloadHash: "json"` parses the body first), written as RFC 8785
 *     (JSON Canonicalization Scheme) writes it: object members sorted by the UTF-16 code units of their
 *     names, no whitespace, strings and numbers as ECMAScript's JSON.stringify writes them (JCS is defined in
 *     those terms). `{"b":1,"a":[1.0,"x"]}` and `{ "a": [1, "x"], "b": 1 }` hash alike.
 * Hand-written rather than a dependency: JCS is JSON.stringify's primitives plus sorted members (a dozen
 * lines), and keyward/client stays free of modules a browser, an edge runtime or Bun would have to resolve.
 */
import { sha256Hex } from "./bytes";

/** `value` as RFC 8785 canonical JSON. Throws a TypeError for what JSON cannot hold (NaN, Infinity, a BigInt). */
export function canonicalJson(value: unknown): string {
  const out = serialize(value);
  if (out === undefined) throw new TypeError("canonicalJson: the value has no JSON form (undefined, a function or a symbol)");
  return out;
}

function serialize(input: unknown): string | undefined {
  let v = input;
  if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function") v = (v as { toJSON(): unknown }).toJSON();
  switch (typeof v) {
    case "string":
    case "boolean":
      return JSON.stringify(v);
    case "number":
      if (!Number.isFinite(v)) throw new TypeError(`canonicalJson: ${v} has no JSON form`);
      return JSON.stringify(v);
    case "bigint":
      throw new TypeError("canonicalJson: a BigInt has no JSON form");
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  if (v === null) return "null";
  if (Array.isArray(v)) return `[${v.map((x) => serialize(x) ?? "null").join(",")}]`;
  const members: string[] = [];
  for (const name of Object.keys(v as object).sort()) {
    const s = serialize((v as Record<string, unknown>)[name]);
    if (s !== undefined) members.push(`${JSON.stringify(name)}:${s}`);
  }
  return `{${members.join(",")}}`;
}

/** The payload hash of `value`: of its bytes when it is bytes or a string, else of its canonical JSON. */
export async function payloadHashOf(value: unknown): Promise<string> {
  if (typeof value === "string" || value instanceof Uint8Array || value instanceof ArrayBuffer) return sha256Hex(value);
  return sha256Hex(canonicalJson(value));
}
