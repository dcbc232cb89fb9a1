/** GET /api/v1/dead-letters/:id — one dead letter with its payload and key state (read); 404 when unknown. */
import { getDeadLetter } from "@/lib/deadletters/list";
import { json, route } from "@/lib/http/route";
import { deadLetterDetailSchema, deadLetterParams } from "@/lib/deadletters/schema";

export const GET = route(async ({ params }) => json(await getDeadLetter(params.id)), {
  allow: ["read"],
  params: deadLetterParams,
  summary: "One dead letter with its payload and key state",
  responses: { 200: { description: "The letter, its payload as base64 (and as text when it is UTF-8), its key state", schema: deadLetterDetailSchema } },
  errors: [404],
});
