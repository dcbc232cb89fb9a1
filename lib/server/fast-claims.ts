/**
 * The claim fast lane: POST /api/v1/claims and POST /api/v1/claims/batch answered in Node's own terms
 * (IncomingMessage in, ServerResponse out) when the request is the common, well-formed kind: an API key
 * with scope claims:write in `Authorization: Bearer`, a JSON body within the limit, valid fields, no query
 * string. That skips building a Web Request and Response, a body stream and a second JSON pass per request.
 *
 * Anything else — no key (a session cookie), a key that is not valid or lacks the scope, another
 * content type, a body too large, bad JSON, invalid fields — is handed to the route module itself
 * (lib/claims/http.ts, re-exported by app/api/v1/claims/**, through fast-routes.ts) with the body bytes already read put back in front of
 * the rest of the stream, so every refusal is the route's own answer, byte for byte. Errors once the
 * request is accepted (unknown source, database down) are rendered by the route wrapper's own
 * errorResponse(). The answer of an accepted claim is the route's: the same status, body and headers.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { actorOf } from "@/lib/auth/principal";
import { verifyApiKey } from "@/lib/auth/api-keys";
import { isAllowed } from "@/lib/auth/authorize";
import { claimEvent, claimEvents } from "@/lib/claims/claim";
import { batchClaimRequest, claimRequest, OUTCOME_STATUS } from "@/lib/claims/schema";
import { errorResponse, MAX_BODY_BYTES } from "@/lib/http/route";
import { API_HEADERS } from "@/lib/http/headers";

export type FastClaimKind = "claim" | "batch";

/** The request was answered here. */
export const ANSWERED = null;
/**
 * Not answered: serve it through the route module. `read`: the body bytes already read (null: none; the
 * request's stream is untouched), and whether they are all of it (`complete`) or the rest is still to come.
 */
export type Fallback = { read: null | { prefix: Buffer[]; complete: boolean } };

const BEARER = /^Bearer\s+(\S+)$/i;
const JSON_TYPE = /^application\/(.+\+)?json\b/i;
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const ALLOW = ["claims:write"] as const;
const NOTHING_READ: Fallback = { read: null };
const BASE_HEADERS: Record<string, string> = Object.fromEntries(API_HEADERS);

export async function serveClaimNative(kind: FastClaimKind, req: IncomingMessage, res: ServerResponse): Promise<Fallback | null> {
  // The route's order: authenticate, authorize, then the body. Only the accepted path is taken here.
  if (req.url!.includes("?")) return NOTHING_READ;
  const bearer = BEARER.exec(req.headers.authorization ?? "");
  if (!bearer) return NOTHING_READ;
  const type = req.headers["content-type"] ?? "";
  if (!JSON_TYPE.test(type) || Number(req.headers["content-length"] ?? NaN) > MAX_BODY_BYTES) return NOTHING_READ;
  let principal;
  try {
    principal = await verifyApiKey(bearer[1]);
  } catch (err) {
    await writeResponse(res, errorResponse(err));
    return ANSWERED;
  }
  if (!principal || !isAllowed(principal, ALLOW)) return NOTHING_READ;

  let chunks: Buffer[];
  try {
    const read = await readUpTo(req, MAX_BODY_BYTES);
    chunks = read.chunks;
    if (!read.complete) return { read: { prefix: chunks, complete: false } };
  } catch {
    res.destroy(); // the client went away mid-body: nobody to answer
    return ANSWERED;
  }
  let body: unknown;
  try {
    body = JSON.parse(UTF8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
  } catch {
    return { read: { prefix: chunks, complete: true } };
  }
  const actor = actorOf(principal);
  try {
    if (kind === "claim") {
      const parsed = claimRequest.safeParse(body);
      if (!parsed.success) return { read: { prefix: chunks, complete: true } };
      const result = await claimEvent(parsed.data, { actor });
      writeJson(res, OUTCOME_STATUS[result.outcome], JSON.stringify(result));
    } else {
      const parsed = batchClaimRequest.safeParse(body);
      if (!parsed.success) return { read: { prefix: chunks, complete: true } };
      const results = await claimEvents(parsed.data, { actor });
      writeJson(res, 200, JSON.stringify({ results }));
    }
  } catch (err) {
    await writeResponse(res, errorResponse(err));
  }
  return ANSWERED;
}

/**
 * Reads the body up to `max` bytes. Past that it stops with the stream paused, nothing lost (a `for await`
 * that breaks would destroy the stream), so the route can read the rest and answer 413 itself.
 */
function readUpTo(req: IncomingMessage, max: number): Promise<{ chunks: Buffer[]; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      req.pause();
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.byteLength;
      if (size > max) {
        done();
        resolve({ chunks, complete: false });
      }
    };
    const onEnd = () => {
      done();
      resolve({ chunks, complete: true });
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const onClose = () => {
      if (req.complete) return onEnd();
      done();
      reject(new Error("request closed before its body ended"));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

function writeJson(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { ...BASE_HEADERS, "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Writes a Web Response (an error rendered by the route wrapper) with the API headers. */
export async function writeResponse(res: ServerResponse, response: Response, extra?: Record<string, string>): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer());
  const out: Record<string, string> = { ...BASE_HEADERS };
  response.headers.forEach((value, name) => (out[name] = value));
  out["content-length"] = String(body.byteLength);
  Object.assign(out, extra);
  res.writeHead(response.status, out);
  res.end(body);
}
