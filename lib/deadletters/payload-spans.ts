/**
 * Where the `payload` values sit in a dead-letter request body, as byte offsets, so intake stores the
 * payload's own source bytes instead of a JSON.parse → JSON.stringify round trip (which rounds integers
 * above 2^53, drops whitespace, rewrites `\/`, `200.0` and key order).
 *
 * Contract: `bytes` is a JSON text that JSON.parse has already accepted (intake checks that first, so
 * this scanner only follows structure: strings, brackets, commas, colons; it never validates). It is
 * iterative (an explicit stack, no recursion), so no nesting depth can overflow the call stack, and it
 * runs once over the bytes. It reports:
 *   - `payload`: the span of the top-level object's `payload` member (a single letter);
 *   - `items[i]`: the span of the `payload` member of element i of the top-level `items` array (a batch).
 * A repeated key counts as JSON.parse counts it: the last one wins. Each span carries the value's nesting
 * depth (a scalar 0, `{}` or `[]` 1, `[[1]]` 2) so intake can refuse a payload nested too deeply.
 * Working on bytes rather than a decoded string keeps the span exact: every structural character is
 * ASCII, and no byte of a multi-byte UTF-8 sequence is ASCII.
 */
export type PayloadSpan = { start: number; end: number; depth: number };
export type PayloadSpans = { payload?: PayloadSpan; items: (PayloadSpan | undefined)[] };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

const isWhitespace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const endsScalar = (c: number) => c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || isWhitespace(c);

type Frame = { object: boolean; expectKey: boolean; key: "payload" | "items" | null; index: number };
type Target = { kind: "payload" } | { kind: "item"; index: number } | { kind: "items" };
type Recording = { start: number; base: number; depth: number; index: number | null };

/** Offset just past the closing quote of the string starting at `start` (a `"`); native search for the quote. */
function endOfString(bytes: Uint8Array, start: number): number {
  let from = start + 1;
  for (;;) {
    const q = bytes.indexOf(QUOTE, from);
    let backslashes = 0;
    while (bytes[q - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return q + 1; // not escaped
    from = q + 1;
  }
}

const PAYLOAD = Buffer.from("payload");
const ITEMS = Buffer.from("items");

/**
 * A member name, as far as this scanner cares: "payload", "items", or null for any other. Compared on the
 * bytes (no allocation); a name with escapes (`"pay\u006coad"`) is decoded by JSON.parse.
 */
function keyName(bytes: Uint8Array, start: number, end: number): "payload" | "items" | null {
  const inner = bytes.subarray(start + 1, end - 1);
  if (inner.includes(BACKSLASH)) {
    const name = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString("utf8")) as string;
    return name === "payload" || name === "items" ? name : null;
  }
  if (inner.length === PAYLOAD.length && PAYLOAD.equals(inner)) return "payload";
  if (inner.length === ITEMS.length && ITEMS.equals(inner)) return "items";
  return null;
}

export function findPayloadSpans(bytes: Uint8Array): PayloadSpans {
  const out: PayloadSpans = { items: [] };
  const stack: Frame[] = [];
  let rec = null as Recording | null; // (set inside the closures below)

  // Which recorded value (if any) begins here, judged by the containers around it.
  const targetHere = (): Target | null => {
    const [top, second, third] = stack;
    if (stack.length === 1 && top.object && top.key === "payload") return { kind: "payload" };
    if (stack.length === 1 && top.object && top.key === "items") return { kind: "items" };
    if (stack.length === 3 && top.object && top.key === "items" && !second.object && third.object && third.key === "payload") {
      return { kind: "item", index: second.index };
    }
    return null;
  };
  const valueStart = (at: number) => {
    if (rec) return;
    const t = targetHere();
    if (!t) return;
    if (t.kind === "items") out.items = []; // a repeated "items": the last array wins
    else rec = { start: at, base: stack.length, depth: 0, index: t.kind === "item" ? t.index : null };
  };
  const valueEnd = (at: number) => {
    if (!rec || stack.length !== rec.base) return;
    const span = { start: rec.start, end: at, depth: rec.depth };
    if (rec.index === null) out.payload = span;
    else out.items[rec.index] = span;
    rec = null;
  };

  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const c = bytes[i];
    if (isWhitespace(c) || c === COLON) {
      i++;
    } else if (c === QUOTE) {
      const end = endOfString(bytes, i);
      const top = stack[stack.length - 1];
      if (top?.object && top.expectKey) {
        // Only the names of the body's object (depth 1) and of batch items (depth 3) matter.
        top.key = !rec && (stack.length === 1 || stack.length === 3) ? keyName(bytes, i, end) : null;
        top.expectKey = false;
      } else {
        valueStart(i);
        valueEnd(end);
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      valueStart(i);
      stack.push({ object: c === OPEN_OBJECT, expectKey: c === OPEN_OBJECT, key: null, index: 0 });
      if (rec) rec.depth = Math.max(rec.depth, stack.length - rec.base);
      i++;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      stack.pop();
      i++;
      valueEnd(i);
    } else if (c === COMMA) {
      const top = stack[stack.length - 1];
      if (top.object) {
        top.expectKey = true;
        top.key = null;
      } else top.index++;
      i++;
    } else {
      // A number, true, false or null: up to the next delimiter.
      let end = i + 1;
      while (end < n && !endsScalar(bytes[end])) end++;
      valueStart(i);
      valueEnd(end);
      i = end;
    }
  }
  return out;
}
