/**
 * The one error body, `{ "error": { "code", "message", "details"? } }`, as a schema: errorResponse
 * (route.ts) and the API edge write it, the API description (lib/openapi/document.ts) publishes it.
 */
import { z } from "zod";

export const errorBody = z.object({
  error: z.object({
    /** Stable, machine-readable: `not_found`, `invalid_request`, `in_flight` … */
    code: z.string(),
    /** For people; may change. */
    message: z.string(),
    /** Per code: `fields` on a 422 (each refused field with why), `retryAfterSeconds`, counts … */
    details: z.unknown().optional(),
  }),
});
export type ErrorBody = z.infer<typeof errorBody>;
