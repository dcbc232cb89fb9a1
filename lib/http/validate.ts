/**
 * Validation at the edge: a zod failure becomes a 422 naming every offending field. `route()` (lib/http/
 * route.ts) parses a request's params, query, headers and body with it, the CLI its arguments, so both
 * refuse the same input with the same answer; lib takes the parsed values. The one exception is a
 * malformed id in a path (`pathId`, lib/http/ids.ts): it names no resource, so it is that resource's 404.
 */
import type { z } from "zod";
import { KeywardError } from "@/lib/errors";
import type { NotFoundIssue } from "./ids";

export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    const notFound = issue.code === "custom" ? (issue.params as Partial<NotFoundIssue> | undefined)?.notFound : undefined;
    if (notFound) throw KeywardError.notFound(notFound.code, issue.message);
  }
  throw invalidRequest(parsed.error.issues);
}

/** The one 422 of refused input: `invalid request: field: message; …` with `details.fields`. */
export function invalidRequest(issues: readonly { path: readonly PropertyKey[]; message: string }[]): KeywardError {
  const fields = issues.map((i) => ({ field: i.path.map(String).join(".") || "(body)", message: i.message }));
  const summary = fields.map((f) => `${f.field}: ${f.message}`).join("; ");
  return KeywardError.unprocessable("invalid_request", `invalid request: ${summary}`, { fields });
}
