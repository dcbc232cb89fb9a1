/**
 * How KEYWARD_REDIS_URL names a Redis: one server, a Sentinel set-up or a Cluster (ioredis speaks all three).
 *
 *   redis://[user:password@]host:port[/db]              one server (rediss:// for TLS)
 *   redis+sentinel://[user:password@]h1:p1,h2:p2/name   the primary that the Sentinels at h1:p1, h2:p2 name `name`
 *   redis+cluster://[user:password@]h1:p1,h2:p2         a Redis Cluster, found from any of the seed nodes
 *
 * (`rediss+sentinel://` and `rediss+cluster://` connect with TLS.) The user and password are the data
 * nodes'; Sentinels are asked without them unless `?sentinelPassword=…` is given.
 */
import Redis, { Cluster, type RedisOptions } from "ioredis";

export type RedisTopology = "standalone" | "sentinel" | "cluster";

export type ParsedRedisUrl =
  | { topology: "standalone"; url: string }
  | { topology: "sentinel"; nodes: { host: string; port: number }[]; name: string; username?: string; password?: string; sentinelPassword?: string; tls: boolean }
  | { topology: "cluster"; nodes: { host: string; port: number }[]; username?: string; password?: string; tls: boolean };


function hosts(list: string): { host: string; port: number }[] {
  return list.split(",").map((hp) => {
    const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(hp.trim());
    if (!m || !m[1]) throw new Error(`KEYWARD_REDIS_URL: bad host "${hp}"`);
    return { host: m[1], port: m[2] ? Number(m[2]) : 6379 };
  });
}

/** Parses KEYWARD_REDIS_URL (its scheme already checked by lib/config/env.ts). */
export function parseRedisUrl(url: string): ParsedRedisUrl {
  const m = /^(rediss?)\+(sentinel|cluster):\/\/(?:([^@/]*)@)?([^/?]+)(?:\/([^?]*))?(?:\?(.*))?$/.exec(url);
  if (!m) return { topology: "standalone", url };
  const [, scheme, kind, auth, list, path, search] = m;
  // user:password, split at the first colon only (a password may hold more, as in a plain redis:// URL)
  const colon = auth ? auth.indexOf(":") : -1;
  const [user, pass] = !auth ? [] : colon < 0 ? [decodeURIComponent(auth)] : [auth.slice(0, colon), auth.slice(colon + 1)].map(decodeURIComponent);
  const credentials = { username: user || undefined, password: pass || undefined, tls: scheme === "rediss" };
  if (kind === "cluster") return { topology: "cluster", nodes: hosts(list), ...credentials };
  const name = decodeURIComponent(path ?? "");
  if (!name) throw new Error("KEYWARD_REDIS_URL: a redis+sentinel:// URL names its primary: redis+sentinel://host:26379/mymaster");
  const sentinelPassword = new URLSearchParams(search ?? "").get("sentinelPassword") ?? undefined;
  return { topology: "sentinel", nodes: hosts(list), name, sentinelPassword, ...credentials };
}

/** A client for the URL's Redis with these options (timeouts, no offline queue, retries). */
export function connectRedis(url: string, options: RedisOptions): { client: Redis | Cluster; topology: RedisTopology } {
  const p = parseRedisUrl(url);
  if (p.topology === "standalone") return { client: new Redis(p.url, options), topology: "standalone" };
  const tls = p.tls ? { tls: {} } : {};
  const auth = { username: p.username, password: p.password };
  if (p.topology === "sentinel") {
    const client = new Redis({
      ...options,
      ...auth,
      ...tls,
      sentinels: p.nodes,
      name: p.name,
      sentinelPassword: p.sentinelPassword,
      // Learns of a failover from the Sentinels at once, instead of when the old primary's connection breaks.
      failoverDetector: true,
      sentinelRetryStrategy: (times: number) => Math.min(100 * times, 2000),
      // A primary that was demoted under an open connection refuses writes: reconnect to the new one.
      reconnectOnError: (err) => /READONLY/.test(err.message),
    });
    return { client, topology: "sentinel" };
  }
  const client = new Cluster(p.nodes, {
    redisOptions: { ...options, ...auth, ...tls },
    enableOfflineQueue: false,
    // Never auto-pipelined on a Cluster: ioredis groups a script call by its first argument (numkeys, not a
    // key), so calls for buckets on different nodes land in one pipeline and fail with "All keys in the
    // pipeline should belong to the same slots allocation group" (ioredis#2109; every call failed).
    enableAutoPipelining: false,
    scaleReads: "master",
    clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
    retryDelayOnFailover: 50,
    retryDelayOnClusterDown: 50,
    slotsRefreshTimeout: 1000,
  });
  return { client, topology: "cluster" };
}
