/**
 * Field schemas every request shares, so one rule holds on every route (and in the CLI and console,
 * which import this file: no server code here).
 *
 * - Text PostgreSQL can store: `text` columns and `jsonb` reject NUL, and a lone UTF-16 surrogate is
 *   not Unicode (pg would write U+FFFD in its place, or jsonb refuse the `\udXXX` escape). Such input is
 *   a 422 naming the field, never a database error.
 * - An instant PostgreSQL can store and JavaScript can compute with: an ISO 8601 time on a real calendar
 *   day (zod checks the day of the month), between 0001-01-01 and 9999-12-31 UTC (year 0000 parses in
 *   JavaScript but not in PostgreSQL).
 */
import { z } from "zod";

// eslint-disable-next-line no-control-regex -- NUL is what this finds: PostgreSQL text cannot hold it
const NUL = /\u0000/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why PostgreSQL cannot store this text, or null when it can. */
export function unstorableReason(s: string): string | null {
  if (NUL.test(s)) return "must not contain NUL characters";
  if (LONE_SURROGATE.test(s)) return "must be valid Unicode (no lone surrogates)";
  return null;
}

/** Any text, as long as PostgreSQL can store it; chain .min/.max/.trim as usual. */
export const storableText = () =>
  z.string().check((ctx) => {
    const reason = unstorableReason(ctx.value);
    if (reason) ctx.issues.push({ code: "custom", message: reason, input: ctx.value });
  });

/**
 * `s` as text that names it unambiguously and can be stored: NUL, other control characters and lone
 * surrogates written as JSON escapes (`\u0000`). For recording what a caller sent when what it sent is
 * the reason for refusing it.
 */
export function storableRepresentation(s: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
  return s.replace(/[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, (c) =>
    `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

const MIN_INSTANT_MS = Date.parse("0001-01-01T00:00:00Z");
const MAX_INSTANT_MS = Date.parse("9999-12-31T23:59:59.999Z");

export const INSTANT_MESSAGE = "must be an ISO-8601 time, e.g. 2026-12-01T00:00:00Z";

/** An ISO 8601 time with an offset (`Z` or `±hh:mm`) that PostgreSQL and JavaScript both accept. */
export const instant = z.iso.datetime({ offset: true, error: INSTANT_MESSAGE }).refine((s) => {
  const ms = Date.parse(s);
  return ms >= MIN_INSTANT_MS && ms <= MAX_INSTANT_MS;
}, "must be between 0001-01-01 and 9999-12-31 (UTC)");

/**
 * A JSON answer's type (the `z.infer` of its response schema, times as ISO text) with the named time fields
 * as the Dates the server holds until json() writes them: one declaration for the server and the console.
 */
export type WithDates<T, K extends keyof T> = Omit<T, K> & { [P in K]: null extends T[P] ? Date | null : Date };

/**
 * True when `value` is an `instant` ("2026-12-04T05:41:16.884+00:00", "…Z"): for cursors and other composite
 * values that carry a time, and for the console's audit and action details, whose times it shows as times.
 */
export const isInstant = (value: unknown): value is string => instant.safeParse(value).success;
