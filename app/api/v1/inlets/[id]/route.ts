/**
 * DELETE /api/v1/inlets/:id — stop consuming the inlet's queue (admins); its dead letters stay. 200
 * { removed: inlet }; 404 for an unknown id. Servers stop within KEYWARD_INLET_POLL_MS. Recorded as
 * `inlet.remove`.
 */
import { removeInlet } from "@/lib/inlets/inlets";
import { inletParams, removedInletSchema } from "@/lib/inlets/schema";
import { json, route } from "@/lib/http/route";

export const DELETE = route(async ({ params, principal }) => json(await removeInlet(params.id, principal)), {
  allow: ["admin"],
  params: inletParams,
  summary: "Stop consuming an inlet's queue (its dead letters stay)",
  responses: { 200: { description: "{ removed: inlet }", schema: removedInletSchema } },
  errors: [404],
});
