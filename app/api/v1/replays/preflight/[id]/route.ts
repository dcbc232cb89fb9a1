/** GET /api/v1/replays/preflight/:id — a stored preflight with its items as classified (read); 404 when unknown. */
import { getPreflight } from "@/lib/replay/preflight";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params }) => json(await getPreflight(params.id)), {
  allow: ["read"],
  summary: "A stored preflight with its items as classified",
  errors: [404],
});
