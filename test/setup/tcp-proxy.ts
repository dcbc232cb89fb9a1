/**
 * A TCP proxy between Keyward and PostgreSQL that a test switches between network faults:
 *   forward    bytes pass both ways (the healthy network);
 *   refuse     the database is down: open connections are reset, new ones are accepted and reset at once;
 *   refuseNew  new connections are reset at once, open ones keep forwarding (a connection lost on its own
 *              cannot come back);
 *   blackhole  packets silently vanish (a failover, a lost NAT entry): new connections are accepted and
 *              never answered, bytes on open connections are dropped both ways, and every socket stays open.
 * Back to `forward` heals the network for new connections and for open ones (whatever was dropped on an
 * open connection stays lost, as on a real network after a long partition: only timeouts recover it).
 *
 * `blackholeAfter(marker)` black-holes just the connections that carry `marker` from client to server,
 * from the moment it passes: the request reached the database, its answer never comes back.
 * `setDelay(ms)` delays every chunk both ways by `ms` (a slow network or server; order is kept), and
 * `retarget(target)` sends new connections to another server and resets the open ones (a virtual IP moved
 * to a promoted replica).
 */
import net from "node:net";

export type ProxyMode = "forward" | "refuse" | "refuseNew" | "blackhole";

type Pair = { client: net.Socket; server: net.Socket | null; holed: boolean };

export type TcpProxy = {
  port: number;
  /** `postgresql://…` URL of `target` with host and port replaced by the proxy's. */
  url: (targetUrl: string) => string;
  mode: () => ProxyMode;
  setMode: (mode: ProxyMode) => void;
  blackholeAfter: (marker: string) => void;
  setDelay: (ms: number) => void;
  retarget: (target: { host: string; port: number }) => void;
  /** Open client connections (all modes). */
  connections: () => number;
  close: () => Promise<void>;
};

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: ProxyMode = "forward";
  let marker: Buffer | null = null;
  let delay = 0;
  const later = (fn: () => void) => (delay > 0 ? setTimeout(fn, delay) : fn());
  const pairs = new Set<Pair>();

  const drop = (pair: Pair) => {
    pair.client.destroy();
    pair.server?.destroy();
    pairs.delete(pair);
  };

  const server = net.createServer((client) => {
    client.on("error", () => {});
    if (mode === "refuse" || mode === "refuseNew") {
      client.resetAndDestroy();
      return;
    }
    const pair: Pair = { client, server: null, holed: false };
    pairs.add(pair);
    client.once("close", () => drop(pair));
    if (mode === "blackhole") {
      // Accepted (the kernel completed the handshake) and then never answered, even after healing.
      pair.holed = true;
      client.on("data", () => {});
      return;
    }
    const upstream = net.connect(target.port, target.host);
    pair.server = upstream;
    upstream.on("error", () => {});
    upstream.once("close", () => drop(pair));
    upstream.setNoDelay(true);
    client.setNoDelay(true);
    client.on("data", (chunk: Buffer) => {
      // A marked request still reaches the database; only what comes back afterwards is lost.
      if (marker && chunk.includes(marker)) pair.holed = true;
      if (mode === "forward" || mode === "refuseNew") later(() => upstream.write(chunk));
    });
    upstream.on("data", (chunk: Buffer) => {
      if ((mode === "forward" || mode === "refuseNew") && !pair.holed) later(() => client.write(chunk));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;

  return {
    port,
    url: (targetUrl) => {
      const u = new URL(targetUrl);
      u.hostname = "127.0.0.1";
      u.port = String(port);
      return u.toString();
    },
    mode: () => mode,
    setMode: (next) => {
      mode = next;
      if (next === "refuse") {
        for (const p of [...pairs]) {
          p.client.resetAndDestroy();
          drop(p);
        }
      }
      if (next === "forward") marker = null;
    },
    blackholeAfter: (m) => {
      marker = Buffer.from(m);
    },
    setDelay: (ms) => {
      delay = ms;
    },
    retarget: (next) => {
      target = next;
      for (const p of [...pairs]) {
        p.client.resetAndDestroy();
        drop(p);
      }
    },
    connections: () => pairs.size,
    close: async () => {
      for (const p of [...pairs]) drop(p);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
