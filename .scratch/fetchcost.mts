import http from "node:http";
import type { AddressInfo } from "node:net";
const srv = http.createServer((req, res) => { req.resume(); req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end('{"outcome":"processed"}')); });
srv.keepAliveTimeout = 60000;
await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/x`;
const body = Buffer.from(JSON.stringify({ type: "order.paid", id: "bench-xxxxxxxx", amount: 4200 }));
const headers = { "content-type": "application/json", "user-agent": "k", "webhook-id": "abc", "webhook-timestamp": "1", "webhook-signature": "v1,xxxx" };
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
async function viaFetch() { const ac = new AbortController(); const r = await fetch(url, { method: "POST", headers, body, redirect: "manual", signal: ac.signal }); const rd = r.body!.getReader(); while (!(await rd.read()).done); }
function viaHttp() { return new Promise<void>((resolve, reject) => { const req = http.request(url, { method: "POST", headers: { ...headers, "content-length": body.length }, agent }, (res) => { res.on("data", () => {}); res.on("end", resolve); }); req.on("error", reject); req.end(body); }); }
async function run(name: string, f: () => Promise<void>, n = 5000, conc = 32) {
  let next = 0; const c0 = process.cpuUsage(); const t0 = performance.now();
  await Promise.all(Array.from({ length: conc }, async () => { while (next++ < n) await f(); }));
  const c = process.cpuUsage(c0); console.log(name, "wall", (performance.now() - t0).toFixed(0), "ms cpu", ((c.user + c.system) / 1000).toFixed(0), "ms (incl. server)");
}
await run("warm fetch", viaFetch, 500); await run("warm http", viaHttp, 500);
await run("fetch", viaFetch); await run("http", viaHttp); await run("fetch", viaFetch); await run("http", viaHttp);
srv.closeAllConnections(); srv.close(); agent.destroy();
