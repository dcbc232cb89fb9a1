/**
 * One value out of a JSON text, by a path of keys and array indexes (`["data", "object", "id"]`), without
 * parsing the rest into memory: a streaming parser (@streamparser/json) reads the bytes until the value
 * is complete and stops there, so a 25 MiB body costs a pass over its bytes, not a tree of objects.
 * A leading UTF-8 byte order mark is skipped. Used by the raw intake (`json:$.id`) and the inlets
 * (`json:<path>` of a message body). Pure.
 *
 * Differences from JSON.parse that matter here: the first occurrence of a repeated key is the one read
 * (JSON.parse keeps the last), and the text after the value is not checked.
 */
import { JSONParser } from "@streamparser/json";

export type JsonPathResult = { ok: true; value: unknown } | { ok: false; reason: "not_json" | "absent" };

const STOP = Symbol("found");

export function readJsonPath(bytes: Uint8Array, path: readonly string[]): JsonPathResult {
  const parser = new JSONParser({ paths: [["$", ...path].join(".")], keepStack: false });
  let found: { value: unknown } | undefined;
  parser.onValue = ({ value }) => {
    found = { value };
    throw STOP;
  };
  parser.onError = (err) => {
    throw err;
  };
  try {
    parser.write(bytes);
  } catch (err) {
    if (err === STOP) return { ok: true, value: found!.value };
    return { ok: false, reason: "not_json" };
  }
  // The document ended without the path (isEnded), or the bytes stopped in the middle of it.
  return { ok: false, reason: parser.isEnded ? "absent" : "not_json" };
}

/** What a value read by readJsonPath gives as an identifier: a string, or an integer JSON.parse keeps exactly. */
export function identifierOf(value: unknown, where: string): { ok: true; id: string } | { ok: false; reason: string } {
  if (typeof value === "string") return { ok: true, id: value };
  if (typeof value === "number" && Number.isSafeInteger(value)) return { ok: true, id: String(value) };
  if (typeof value === "number") return { ok: false, reason: `${where} is a number that is not an exact integer below 2^53: send the id as a string` };
  return { ok: false, reason: `${where} is ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}, not a string` };
}
