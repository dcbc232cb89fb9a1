/**
 * One way to page a list, for every list of the API (audit search, the action log, dead letters,
 * replays): keyset pagination, newest (or soonest) first, `?limit=&cursor=` in, `{ items, next }` out.
 *
 * A cursor is opaque to callers: base64url of a small JSON object naming the last row's position in
 * the list's order (`{ at, id }`, `{ s, v, i }`…), written by the list that answers it. Each list's
 * query schema declares the shape it expects with `cursorParam(shape)`; a cursor that does not decode
 * to that shape (forged, truncated, from another list) is the route's 422 naming `cursor`, like any other
 * refused field, and never reaches SQL. A page never skips or repeats a row however many rows arrive
 * meanwhile: the next page starts strictly after the position.
 *
 * No server code here: the console imports the list schemas that use it.
 */
import { z } from "zod";

export const CURSOR_MESSAGE = "must be a cursor from a previous page";
/** Longer than any cursor a list writes (a position is a few short fields). */
const MAX_CURSOR_CHARS = 400;

/** The opaque cursor of a position: base64url of its JSON. */
export function encodeCursor(position: Record<string, string>): string {
  return Buffer.from(JSON.stringify(position), "utf8").toString("base64url");
}

/** The position a cursor names, or undefined when it is not base64url of a JSON value. */
export function decodeCursor(cursor: string): unknown {
  if (!/^[A-Za-z0-9_-]*$/.test(cursor)) return undefined;
  try {
    return JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
}

/**
 * The `cursor` query parameter of a list whose positions have this shape: parses to the position, or
 * fails with CURSOR_MESSAGE (whatever is wrong with it: a caller cannot fix a cursor, only drop it).
 */
export function cursorParam<S extends z.ZodType<Record<string, unknown>>>(position: S) {
  return z
    .string()
    .max(MAX_CURSOR_CHARS, CURSOR_MESSAGE)
    .transform((text, ctx): z.output<S> => {
      const parsed = position.safeParse(decodeCursor(text));
      if (parsed.success) return parsed.data;
      ctx.addIssue({ code: "custom", message: CURSOR_MESSAGE, input: text });
      return z.NEVER;
    });
}

/** One page: the items, and the cursor of the next page (null on the last). */
export type Page<T> = { items: T[]; next: string | null };

/**
 * A page from the `limit + 1` rows a list read: the first `limit` as items, and, when there was one
 * more, the cursor of the last item's position.
 */
export function pageOf<Row, Item>(
  rows: readonly Row[],
  limit: number,
  item: (row: Row) => Item,
  position: (last: Row) => Record<string, string>,
): Page<Item> {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { items: page.map(item), next: rows.length > limit && last !== undefined ? encodeCursor(position(last)) : null };
}
