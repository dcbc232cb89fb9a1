/**
 * GET /api/v1/sources/:name/inlets — the source's RabbitMQ inlets with their state and lag, URLs with the
 * password masked (admins): 200 { inlets: [...] }; 404 for an unknown source.
 * POST /api/v1/sources/:name/inlets { amqpUrl, queue, eventIdFrom?, prefetch?, check? } — consume a queue
 * into the source's dead letters (admins): 201 inlet. The URL is stored encrypted and never shown again;
 * unless check is false the queue is checked first (422 inlet_unreachable); 409 inlet_exists. Recorded
 * as `inlet.create`. docs/inlets.md.
 */
import { createInlet, listInlets } from "@/lib/inlets/inlets";
import { json, readJson, route } from "@/lib/http/route";

export const GET = route<{ name: string }>(async ({ params }) => json({ inlets: await listInlets(params.name) }), { allow: ["admin"] });

export const POST = route<{ name: string }>(
  async ({ req, params, principal }) => json(await createInlet(params.name, await readJson(req, 16 * 1024), principal), 201),
  { allow: ["admin"] },
);
