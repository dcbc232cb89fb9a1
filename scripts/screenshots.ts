/**
 * `npm run screenshots`: every console page at 1440×900 and 390×844, light and dark, as full-page PNGs in
 * ./screenshots/<width>x<height>-<scheme>/<page>.png (git-ignored), for a person to look at. The pages are
 * the browser test's (test/setup/console-pages.ts), and each screenshot's layout problems, if any, are
 * printed beside it (the test fails on them).
 *
 * By default it starts `keyward demo` on a free port (its data in ./.keyward-demo/, seeded on the first
 * run; the build checked as `keyward start` does) and stops it at the end. With `--url <base>` it uses a
 * console already running demo data instead (`npm run demo` in another terminal).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { chromium } from "playwright-core";
import { SCHEMES, VIEWPORTS, consolePages, contextAt, layoutProblems, openSettled, signInContext } from "@/test/setup/console-pages";

const ROOT = path.resolve(__dirname, "..");
const OUT = path.join(ROOT, "screenshots");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** `keyward demo` on a free port; resolves with its base URL once it serves. */
async function startDemo(): Promise<{ baseUrl: string; child: ChildProcess }> {
  const port = await freePort();
  // A test runner's NODE_ENV must not reach the server.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "NODE_ENV")) as NodeJS.ProcessEnv;
  const env = Object.assign(inherited, { PORT: String(port), HOSTNAME: "127.0.0.1", KEYWARD_TRUST_PROXY: "true" });
  const child = spawn(process.execPath, [path.join(ROOT, "bin/keyward.cjs"), "demo"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      process.stdout.write(d);
      if (out.includes("console and API on")) resolve();
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`keyward demo exited with ${code}`)));
  });
  return { baseUrl: `http://127.0.0.1:${port}`, child };
}

async function main(): Promise<void> {
  const urlFlag = process.argv.indexOf("--url");
  const given = urlFlag >= 0 ? process.argv[urlFlag + 1] : undefined;
  const demo = given ? undefined : await startDemo();
  const baseUrl = (given ?? demo!.baseUrl).replace(/\/$/, "");
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  let problems = 0;
  try {
    const lookup = await browser.newContext();
    await signInContext(lookup, baseUrl);
    const pages = await consolePages(lookup, baseUrl);
    await lookup.close();
    rmSync(OUT, { recursive: true, force: true });
    for (const viewport of VIEWPORTS) {
      for (const scheme of SCHEMES) {
        const dir = path.join(OUT, `${viewport.width}x${viewport.height}-${scheme}`);
        mkdirSync(dir, { recursive: true });
        const signedIn = await contextAt(browser, viewport, scheme);
        const anonymous = await contextAt(browser, viewport, scheme);
        await signInContext(signedIn, baseUrl);
        for (const p of pages) {
          const page = await (p.signedIn ? signedIn : anonymous).newPage();
          await openSettled(page, baseUrl + p.path);
          const file = path.join(dir, `${p.name}.png`);
          await page.screenshot({ path: file, fullPage: true });
          const found = await layoutProblems(page, viewport);
          problems += found.length;
          console.log(`${path.relative(ROOT, file)}${found.map((f) => `\n  ! ${f}`).join("")}`);
          await page.close();
        }
        await signedIn.close();
        await anonymous.close();
      }
    }
  } finally {
    await browser.close();
    demo?.child.kill("SIGTERM");
  }
  console.log(`${problems ? `${problems} layout problem(s) found` : "no layout problems"}; screenshots in ${path.relative(ROOT, OUT)}/`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
