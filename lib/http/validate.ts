/** Validation at the edge: a zod failure becomes a 422 naming every offending field. */
import type { z } from "zod";
import { KeywardError } from "../errors";

export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const fields = parsed.error.issues.map((i) => ({ field: i.path.join(".") || "(body)", message: i.message }));
  const summary = fields.map((f) => `${f.field}: ${f.message}`).join("; ");
  throw KeywardError.unprocessable("invalid_request", `invalid request: ${summary}`, { fields });
}
