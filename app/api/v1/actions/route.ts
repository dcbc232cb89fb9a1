/**
 * GET /api/v1/actions?limit&before&actor&action — the operator action log, newest first, with a `next`
 * cursor. Operators and admins (and API keys with scope operator).
 */
import { listActions, listActionsQuery } from "@/lib/audit/actions";
import { parseOrThrow } from "@/lib/http/validate";
import { json, route } from "@/lib/http/route";

export const GET = route(
  async ({ req }) => {
    const q = parseOrThrow(listActionsQuery, Object.fromEntries(new URL(req.url).searchParams));
    return json(await listActions(q));
  },
  { allow: ["operator"] },
);
