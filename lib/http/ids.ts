/**
 * The one id rule. Ids this API gives out (replays, preflights, dead letters, inlets, attempts, claim
 * tokens) are PostgreSQL uuids; their text form is 32 hex digits in 8-4-4-4-12 groups, any case (what
 * PostgreSQL's uuid input accepts in canonical form). Checked once, at the edge:
 *
 * - in a body or a query (`uuid()`): a malformed id is a 422 naming the field, like any bad field;
 * - in a path (`pathId()`): a malformed id names no resource, so it answers the same 404 as a well-formed
 *   id that names nothing (the route's own not-found code): a caller learns nothing from the difference.
 *
 * lib functions take ids parsed here and never check them again. No server code (the client package and
 * the console import this file).
 */
import { z } from "zod";

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Whether `s` is an id in the API's form (for classifying free text, e.g. the global search). */
export const isUuid = (s: string): boolean => UUID.test(s);

export const UUID_MESSAGE = "must be an id from this API";

/** An id in a body or query: a 422 naming the field when malformed. */
export const uuid = (message: string = UUID_MESSAGE) => z.string().regex(UUID, message).meta({ format: "uuid" });

/** The `params` of the issue a malformed path id raises: parseInput answers it with this 404. */
export type NotFoundIssue = { notFound: { code: string } };

/**
 * An id in a path segment: malformed, it is the route's 404 (`code`, `message(id)`), never a 422.
 * `parseInput` (lib/http/validate.ts) turns the issue into that 404.
 */
export function pathId(code: string, message: (id: string) => string) {
  return z
    .string()
    .check((ctx) => {
      if (!UUID.test(ctx.value)) {
        ctx.issues.push({ code: "custom", input: ctx.value, message: message(ctx.value), params: { notFound: { code } } satisfies NotFoundIssue });
      }
    })
    .meta({ format: "uuid" });
}
