/**
 * GET /api/v1/sources/:name/inlets — the source's inlets (RabbitMQ, BullMQ, NATS) with their state and lag, URLs with the
 * password masked (admins): 200 { inlets: [...] }; 404 for an unknown source.
 * POST /api/v1/sources/:name/inlets { kind?: "amqp", amqpUrl, queue } | { kind: "bullmq", redisUrl, queue, prefix? }
 * | { kind: "nats", natsUrl, stream, consumer, advisoryStream? }, each with eventIdFrom?, prefetch?, check? —
 * take what fails there into the source's dead letters (admins): 201 inlet. The URL is stored encrypted and
 * never shown again; unless check is false the queue (stream, consumer) is checked first (422
 * inlet_unreachable); 409 inlet_exists. Recorded
 * as `inlet.create`. docs/inlets.md.
 */
import { createInlet, listInlets } from "@/lib/inlets/inlets";
import { createInletRequest, inletListSchema, inletSchema } from "@/lib/inlets/schema";
import { sourceParams } from "@/lib/sources/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params }) => json({ inlets: await listInlets(params.name) }), {
  allow: ["admin"],
  params: sourceParams,
  summary: "The source's inlets (RabbitMQ, BullMQ, NATS) with their state and lag",
  responses: { 200: { description: "{ inlets }", schema: inletListSchema } },
  errors: [404],
});

export const POST = route(async ({ params, body, principal }) => json(await createInlet(params.name, body, principal), 201), {
  allow: ["admin"],
  params: sourceParams,
  body: createInletRequest,
  maxBodyBytes: 16 * 1024,
  summary: "Consume a RabbitMQ queue into the source's dead letters",
  responses: { 201: { description: "The inlet (the URL's password masked)", schema: inletSchema } },
  errors: [404, 409],
});
