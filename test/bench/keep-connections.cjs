// Benchmark only, loaded into the bench process and (through NODE_OPTIONS=--require) into the server:
// every pg pool keeps its connections for the whole run instead of closing them after 10 s idle (the
// pg-pool default, which lib/db/client.ts keeps). The bench runs each scenario once per cycle, about
// 40 s apart, so without this the library's and the server's pools would start every slice on new
// PostgreSQL backends, which on this kind of machine run the claim statement at roughly 0.5-0.9× the
// rate of long-lived ones for a while (the "fresh connections" row measures that), while the raw
// baseline, used every other slice, never goes idle. Pools the bench recreates on purpose are unaffected.
const Pool = require("pg-pool");

const connect = Pool.prototype.connect;
Pool.prototype.connect = function keepConnections(...args) {
  this.options.idleTimeoutMillis = 0;
  return connect.apply(this, args);
};
