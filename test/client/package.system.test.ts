/**
 * keyward/client as a consumer gets it: `npm run build:client` (what `prepare` runs) compiles lib/client
 * into dist/, and a plain Node/TypeScript project that depends on this repository (node_modules/keyward
 * linked to it, as npm does for a `file:` dependency) can require it (and keyward/client/express, /fastify),
 * import it, and type-check against its .d.ts; the compiled client loads no server code, nor the frameworks.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "@/test/setup/server";

let dir: string;
const node = (args: string[]) => execFileSync(process.execPath, args, { cwd: dir, encoding: "utf8" });

beforeAll(() => {
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.client.json"], { cwd: ROOT });
  dir = mkdtempSync(path.join(os.tmpdir(), "keyward-consumer-"));
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, dependencies: { keyward: `file:${ROOT}` } }));
  mkdirSync(path.join(dir, "node_modules"));
  symlinkSync(ROOT, path.join(dir, "node_modules/keyward"), "dir");
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("keyward/client from a consumer project", () => {
  it("requires and imports", () => {
    const cjs = node(["-e", "const k = require('keyward/client'); console.log(Object.keys(k).sort().join(','))"]);
    expect(cjs.trim()).toBe(
      "IdempotencyError,KeywardApiError,canonicalJson,createKeywardClient,isIdempotencyError,isKeywardApiError,makeIdempotent,payloadHashOf,savedResponse,withIdempotency",
    );
    const adapters = node(["-e", "console.log(typeof require('keyward/client/express').idempotency, typeof require('keyward/client/fastify').keywardIdempotency)"]);
    expect(adapters.trim()).toBe("function function");
    const esm = node([
      "--input-type=module",
      "-e",
      `import { createKeywardClient, KeywardApiError, withIdempotency } from "keyward/client";
       import { toNodeHandler } from "keyward/client/node";
       const c = createKeywardClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k", retries: 0 });
       const e = await c.state({ source: "s", eventId: "e" }).catch((e) => e);
       console.log(typeof withIdempotency, typeof toNodeHandler, e instanceof KeywardApiError, e.code);`,
    ]);
    expect(esm.trim()).toBe("function function true network_error");
  });

  it("type-checks a consumer's TypeScript against the shipped .d.ts (and catches a type error)", () => {
    writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: "node16",
          moduleResolution: "node16",
          target: "ES2022",
          lib: ["ES2023", "dom"],
          types: ["node"],
          skipLibCheck: true,
          typeRoots: [path.join(ROOT, "node_modules/@types")],
        },
        files: ["route.ts", "wrong.ts"],
      }),
    );
    const good = `import { createKeywardClient, withIdempotency, makeIdempotent, type ClaimResult, KeywardApiError } from "keyward/client";
import { idempotency, idempotencyOf } from "keyward/client/express";
import { keywardIdempotency } from "keyward/client/fastify";
const client = createKeywardClient({ baseUrl: "https://keyward.internal", apiKey: "kw_x" });
export const POST = withIdempotency(
  async (req, info) => Response.json({ ok: true, token: info.claimToken, aborted: info.signal.aborted, body: await req.text() }),
  { client, source: "stripe", eventId: (req) => req.headers.get("webhook-id") ?? "", payloadHash: "body", saveResult: true },
);
type Order = { id: string; amount: number };
export const handle = makeIdempotent(async (o: Order, { signal }) => ({ charged: o.amount, aborted: signal.aborted }), {
  client, source: "orders", eventId: (o) => o.id, payload: (o) => o, saveResult: true,
});
export async function g(o: Order): Promise<number | undefined> { return (await handle(o))?.charged; }
export const mw = idempotency({ client, source: "stripe", eventId: (req) => req.headers["webhook-id"] as string });
export const info = (req: import("node:http").IncomingMessage) => idempotencyOf(req)?.signal;
export const plugin = keywardIdempotency;
export async function f(): Promise<string> {
  const r: ClaimResult = await client.claim({ source: "s", eventId: "e", eventType: "t" });
  try { await client.complete({ source: "s", eventId: "e", claimToken: r.claimToken! }); }
  catch (e) { if (e instanceof KeywardApiError && e.retryable) return e.code; }
  return r.outcome;
}
`;
    // One compiler run over a correct file and a wrong one (tsc is slow on a loaded machine): only the
    // wrong one may fail, naming its mistake.
    writeFileSync(path.join(dir, "route.ts"), good);
    writeFileSync(path.join(dir, "wrong.ts"), good.replace('eventType: "t"', "eventType: 7"));
    let output = "";
    try {
      node([path.join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "."]);
    } catch (err) {
      output = String((err as { stdout?: string }).stdout);
    }
    expect(output).toMatch(/^wrong\.ts\(\d+,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/m);
    expect(output.split("\n").filter((l) => /error TS/.test(l))).toHaveLength(1);
  }, 240_000);

  it("the compiled client requires nothing but itself and node:stream (no Prisma, pg or Next)", () => {
    const out = path.join(ROOT, "dist/lib/client");
    const required = new Set<string>();
    for (const f of readdirSync(out).filter((f) => f.endsWith(".js"))) {
      for (const m of readFileSync(path.join(out, f), "utf8").matchAll(/require\("([^"]+)"\)/g)) required.add(m[1]);
    }
    expect([...required].sort()).toEqual(["./bytes", "./client", "./make-idempotent", "./payload-hash", "./run", "./with-idempotency", "node:stream"]);
  });
});
