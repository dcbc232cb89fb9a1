/**
 * A `keyward start` that cannot serve once its database is open ends with exit code 1 and says why, instead of
 * staying alive on its open pool and timers (a launcher or supervisor would otherwise wait on it forever).
 */
import net from "node:net";
import { afterAll, expect, it } from "vitest";
import { baseEnv, startKeyward, stopServer, type Server } from "@/test/setup/server";

const spawned: Server[] = [];
let holder: net.Server | undefined;

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
  await new Promise((r) => (holder ? holder.close(r) : r(undefined)));
});

it("exits 1 naming the address when its port is taken", async () => {
  holder = net.createServer();
  await new Promise<void>((r) => holder!.listen(0, "127.0.0.1", r));
  const port = (holder.address() as net.AddressInfo).port;
  const started = startKeyward(Object.assign(baseEnv(), { PORT: String(port) }), spawned);
  await expect(started).rejects.toThrow(/exited with 1 before serving/);
  expect(spawned[0].output()).toContain(`[keyward] cannot start: cannot listen on 127.0.0.1:${port}: listen EADDRINUSE`);
});
