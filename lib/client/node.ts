/**
 * `keyward/client/node`: run a Web-standard handler (e.g. one wrapped by withIdempotency) on node:http.
 *
 *   http.createServer(toNodeHandler(withIdempotency(handler, options))).listen(8080);
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";

/** A Web Request for a node:http request (the body streams through unread). */
export function toWebRequest(req: IncomingMessage, origin = "http://localhost"): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  return new Request(new URL(req.url ?? "/", origin), {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
    duplex: "half",
  } as RequestInit);
}

/** Writes a Web Response to a node:http response. */
export async function sendWebResponse(res: ServerResponse, response: Response): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer());
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers["set-cookie"] = cookies;
  headers["content-length"] = String(body.byteLength);
  res.writeHead(response.status, headers);
  res.end(body);
}

/** A node:http request listener serving `handler`; a thrown error answers 500. */
export function toNodeHandler(handler: (req: Request) => Promise<Response>) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    void (async () => {
      let response: Response;
      try {
        response = await handler(toWebRequest(req));
      } catch (err) {
        console.error("[keyward] handler failed:", err);
        response = Response.json({ error: { code: "internal_error", message: "internal error" } }, { status: 500 });
      }
      await sendWebResponse(res, response);
    })().catch((err) => {
      console.error("[keyward] could not answer:", err);
      res.destroy();
    });
  };
}
