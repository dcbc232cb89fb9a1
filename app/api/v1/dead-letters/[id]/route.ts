/** GET /api/v1/dead-letters/:id — one dead letter with its payload and key state (read); 404 when unknown. */
import { getDeadLetter } from "@/lib/deadletters/list";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params }) => json(await getDeadLetter(params.id)), {
  allow: ["read"],
  summary: "One dead letter with its payload and key state",
  errors: [404],
});
