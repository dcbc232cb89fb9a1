/**
 * The claim API as `keyward start` serves it (the same route modules and dispatch, lib/server/fast-routes.ts)
 * on a plain http server of the test file's own, without a Next build: for receivers that claim each delivery
 * through Keyward, as a real consumer would. Also holds the file's receivers and replay workers: the workers
 * are stopped after each test, the receivers and the server after the file. Call at the top of the file.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll } from "vitest";
import type { ReplayWorker } from "@/lib/replay/executor";
import { matchFastRoute, serveFast } from "@/lib/server/fast-routes";
import type { Receiver } from "./receiver";

export function useClaimApi(): { url: () => string; receivers: Receiver[]; workers: ReplayWorker[] } {
  const server = http.createServer((req, res) => {
    const m = matchFastRoute(req.method, req.url);
    if (m) void serveFast(m, req, res);
    else res.writeHead(404).end();
  });
  let url = "";
  const receivers: Receiver[] = [];
  const workers: ReplayWorker[] = [];
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop();
  });
  afterAll(async () => {
    for (const r of receivers) await r.stop();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return { url: () => url, receivers, workers };
}
