/**
 * The dead-letter routes whose bodies are not JSON, each wrapped by route() (lib/http/route.ts). The raw
 * intake is served twice, identically: by Next through app/api/v1/dead-letters/raw/route.ts (which
 * re-exports it) and by `keyward start`'s fast path (lib/server/fast-routes.ts), which hands the request
 * body over as a stream without Next in between, so a 25 MiB body is read once, into one buffer.
 *
 * POST /api/v1/dead-letters/raw — store a failed delivery as it was sent (scope deadletters:write,
 *   operators): the body is the payload, byte for byte, with its Content-Type; the letter's fields come from
 *   the query string or `Keyward-*` headers (schema.ts rawIntakeInput); 201 { id, eventId, eventType,
 *   contentType, payloadBytes }; 413 over KEYWARD_MAX_PAYLOAD_BYTES; 422 naming the field.
 * GET /api/v1/dead-letters/{id}/payload — the payload as stored, with its Content-Type, as an attachment
 *   (read): streamed a chunk at a time, whatever its size.
 */
import { actorOf } from "@/lib/auth/principal";
import { loadEnv } from "@/lib/config/env";
import { KeywardError } from "@/lib/errors";
import { ANY_MEDIA_TYPE, json, route } from "@/lib/http/route";
import { parseInput } from "@/lib/http/validate";
import { database } from "@/lib/db/transaction";
import { recordRawDeadLetter } from "./intake";
import { payloadChunks } from "./payload-store";
import { deadLetterParams, rawIntakeHeader, rawIntakeInput, rawIntakeQuery, recordedRawDeadLetterSchema, type RawIntakeFields } from "./schema";
import { utf8OrLatin1 } from "./sender-headers";

/**
 * The raw intake's fields from the query string and the `Keyward-*` headers, parsed: a field given both
 * ways must say the same thing (422 otherwise). A header's UTF-8 bytes are read as UTF-8.
 */
export function rawIntakeFields(query: Record<string, string | undefined>, headers: Headers): RawIntakeFields {
  const merged: Record<string, string> = {};
  for (const field of Object.keys(rawIntakeInput.shape)) {
    const header = rawIntakeHeader(field);
    const fromHeader = headers.get(header);
    const fromQuery = query[field];
    if (fromQuery !== undefined && fromHeader !== null && fromQuery !== utf8OrLatin1(fromHeader)) {
      const message = `given as the query parameter ${field} and as the header ${header}, differently: give it once`;
      throw KeywardError.unprocessable("invalid_request", `invalid request: ${field}: ${message}`, { fields: [{ field, message }] });
    }
    const value = fromQuery ?? (fromHeader === null ? undefined : utf8OrLatin1(fromHeader));
    if (value !== undefined) merged[field] = value;
  }
  return parseInput(rawIntakeInput, merged);
}

export const rawIntakeHandler = route(
  async ({ req, query, bodyBytes, principal }) => {
    const fields = rawIntakeFields(query, req.headers);
    const stored = await recordRawDeadLetter(fields, { body: bodyBytes, contentType: req.headers.get("content-type"), headers: req.headers }, actorOf(principal));
    return json(stored, 201);
  },
  {
    allow: ["deadletters:write", "operator"],
    query: rawIntakeQuery,
    rawBody: {
      maxBytes: () => loadEnv().KEYWARD_MAX_PAYLOAD_BYTES,
      description:
        "The failed delivery's body, byte for byte, with its Content-Type (a UTF-8 byte order mark before a JSON body is dropped); the letter's fields in the query string or as Keyward-* headers (Keyward-Event-Id-From: header:X-GitHub-Delivery). Limit: KEYWARD_MAX_PAYLOAD_BYTES.",
    },
    summary: "Store a failed delivery as it was sent (raw body) as a dead letter",
    responses: { 201: { description: "{ id, eventId, eventType, contentType, payloadBytes }", schema: recordedRawDeadLetterSchema } },
  },
);

/** A file name for a payload of this media type (the letter's id, and an extension browsers know). */
function fileName(id: string, contentType: string): string {
  const type = contentType.split(";")[0].trim().toLowerCase();
  const ext = /[/+]json$/.test(type) ? "json" : /[/+]xml$/.test(type) ? "xml" : type === "application/x-www-form-urlencoded" ? "txt" : type.startsWith("text/") ? "txt" : "bin";
  return `dead-letter-${id}.${ext}`;
}

export const payloadHandler = route(
  async ({ params }) => {
    const notFound = () => KeywardError.notFound("dead_letter_not_found", `no dead letter ${params.id}`);
    const letter = await database().prisma.deadLetter.findUnique({ where: { id: params.id }, select: { payloadBytes: true, contentType: true } });
    if (!letter) throw notFound();
    const chunks = payloadChunks(params.id, letter.payloadBytes);
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const next = await chunks.next();
        if (next.done) controller.close();
        else if (next.value === null) controller.error(new Error("the dead letter was deleted while it was read"));
        else controller.enqueue(next.value);
      },
      async cancel() {
        await chunks.return(undefined);
      },
    });
    return new Response(body, {
      status: 200,
      headers: {
        "content-type": letter.contentType,
        "content-length": String(letter.payloadBytes),
        "content-disposition": `attachment; filename="${fileName(params.id, letter.contentType)}"`,
        "x-content-type-options": "nosniff",
        "cache-control": "no-store",
      },
    });
  },
  {
    allow: ["read"],
    params: deadLetterParams,
    summary: "Download a dead letter's payload as stored",
    errors: [404],
    responses: { 200: { description: "the payload's bytes, with the Content-Type the letter was stored with, as an attachment", contentType: ANY_MEDIA_TYPE } },
  },
);
