/**
 * KEYWARD_REDIS_URL's Sentinel and Cluster forms (lib/claims/redis-connection.ts parseRedisUrl): hosts,
 * the primary's name, TLS, and credentials split at the first colon, percent-decoded.
 */
import { describe, expect, it } from "vitest";
import { parseRedisUrl } from "@/lib/claims/redis-connection";

describe("parseRedisUrl", () => {
  it("reads a Sentinel URL: hosts, primary, sentinelPassword, TLS, and a password holding colons", () => {
    expect(parseRedisUrl("rediss+sentinel://app:pa:ss%40w@s1:26379,[::1]:26380/mymaster?sentinelPassword=sp")).toEqual({
      topology: "sentinel",
      nodes: [
        { host: "s1", port: 26379 },
        { host: "::1", port: 26380 },
      ],
      name: "mymaster",
      sentinelPassword: "sp",
      username: "app",
      password: "pa:ss@w",
      tls: true,
    });
  });

  it("reads a Cluster URL with a password only, or no credentials; a plain URL is left to ioredis", () => {
    expect(parseRedisUrl("redis+cluster://:secret@n1,n2:7001")).toEqual({
      topology: "cluster",
      nodes: [
        { host: "n1", port: 6379 },
        { host: "n2", port: 7001 },
      ],
      username: undefined,
      password: "secret",
      tls: false,
    });
    expect(parseRedisUrl("redis+cluster://n1:7000")).toMatchObject({ username: undefined, password: undefined });
    expect(parseRedisUrl("redis://u:p:q@h:6379/0")).toEqual({ topology: "standalone", url: "redis://u:p:q@h:6379/0" });
  });

  it("refuses a Sentinel URL without the primary's name, and an empty host", () => {
    expect(() => parseRedisUrl("redis+sentinel://s1:26379")).toThrow(/names its primary/);
    expect(() => parseRedisUrl("redis+cluster://n1,")).toThrow(/bad host ""/);
  });
});
