/**
 * Any method on any /api path no other route serves: 404 in the one error shape, with the API headers
 * (Next would answer its HTML not-found page). Public: the answer is the same for everyone and says
 * nothing about what exists. Malformed paths and trailing slashes are answered before Next
 * (lib/server/api-edge.ts).
 */
import { KeywardError } from "@/lib/errors";
import { route } from "@/lib/http/route";

const notFound = route(
  async ({ req }) => {
    throw KeywardError.notFound("not_found", `no API endpoint at ${req.method} ${new URL(req.url).pathname}`);
  },
  {
    public: "an unknown path is a 404 for every caller, signed in or not",
    summary: "Any other path under /api: a 404 in the one error shape",
    responses: {},
    errors: [404],
  },
);

export const GET = notFound;
export const POST = notFound;
export const PUT = notFound;
export const PATCH = notFound;
export const DELETE = notFound;
