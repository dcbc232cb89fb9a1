/**
 * A keep-alive JSON client for the HTTP scenarios: one http.Agent per concurrency level with
 * maxSockets = clients, so each benchmark client keeps its own connection open.
 *
 * Idle sockets are dropped after 4 s, before Node's server closes them (keepAliveTimeout 5 s): reusing
 * a socket the server is closing fails with "socket hang up" between two scenarios.
 */
import http from "node:http";

const IDLE_SOCKET_MS = 4000;

export type JsonResponse = { status: number; body: unknown };

export class JsonClient {
  private readonly agent: http.Agent;
  private readonly url: URL;

  constructor(
    baseUrl: string,
    clients: number,
    private readonly headers: Record<string, string>,
  ) {
    this.url = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: clients, timeout: IDLE_SOCKET_MS });
  }

  post(path: string, body: string): Promise<JsonResponse> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent: this.agent,
          host: this.url.hostname,
          port: this.url.port,
          path,
          method: "POST",
          headers: {
            ...this.headers,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            try {
              resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
            } catch (err) {
              reject(new Error(`HTTP ${res.statusCode}: unparsable body ${text.slice(0, 200)} (${(err as Error).message})`));
            }
          });
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
