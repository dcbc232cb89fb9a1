/**
 * The Notifications screen in a real browser, against `keyward start` whose KEYWARD_NOTIFY_URL is a local
 * receiver: an operator sees the webhook (its URL's path hidden), sends a test notification and reads what
 * the receiver answered; when the receiver fails, the failure is shown red, never green, in the result and
 * in the latest messages. A viewer sees the screen without the button. At 1440×900 and 390×844 the page
 * does not scroll sideways (screenshots in test-results/).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useConsoleServer } from "@/test/setup/e2e";
import { ROOT } from "@/test/setup/server";

const SECRET = `whsec_${Buffer.from("console-notification-secret-0123456789").toString("base64")}`;
const SHOTS = path.join(ROOT, "test-results", "notifications");

let status = 200;
const bodies: string[] = [];
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    bodies.push(Buffer.concat(chunks).toString("utf8"));
    res.writeHead(status, { "content-type": "text/plain" });
    res.end(status === 200 ? "ok" : "maintenance");
  });
});
// The server's environment is read when its beforeAll runs: the receiver's address is known by then.
const env: Record<string, string> = { KEYWARD_NOTIFY_SECRET: SECRET, KEYWARD_NOTIFY_INTERVAL_SECONDS: "0" };
beforeAll(async () => {
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  env.KEYWARD_NOTIFY_URL = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook/secret-path`;
  mkdirSync(SHOTS, { recursive: true });
});
const e2e = useConsoleServer(env);
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

describe("the Notifications screen", () => {
  it("an operator sends a test notification and sees the receiver's answer; a failing receiver is shown red", async () => {
    const { page, errors } = await e2e.openPage();
    await page.setViewportSize({ width: 1440, height: 900 });
    await e2e.signInAs(page, "operator", "Notifications");
    const webhook = page.getByRole("region", { name: "Webhook" });
    await expect.poll(() => webhook.textContent()).toContain("JSON event signed per Standard Webhooks");
    const text = (await webhook.textContent()) ?? "";
    expect(text).toContain(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/…`);
    expect(text).not.toContain("secret-path");

    await webhook.getByRole("button", { name: "Send test notification" }).click();
    const ok = webhook.getByRole("status");
    await expect.poll(() => ok.textContent()).toMatch(/^Delivered: the receiver answered 200 in \d+ ms\.$/);
    expect(JSON.parse(bodies.at(-1)!)).toMatchObject({ type: "keyward.test", data: { kind: "test" } });
    const messages = page.getByRole("region", { name: "Latest messages" });
    await expect.poll(() => messages.getByRole("row").nth(1).textContent()).toMatch(/Delivered \(200\)Test/);

    status = 503;
    try {
      await webhook.getByRole("button", { name: "Send test notification" }).click();
      const alert = webhook.getByRole("alert");
      await expect.poll(() => alert.textContent()).toBe("Not delivered: the receiver answered 503: maintenance");
      expect(await webhook.getByRole("status").count()).toBe(0);
      // Red, not green: the result's colour is the error tone's, and the message row is marked failed.
      const colour = await alert.evaluate((el) => getComputedStyle(el).color);
      const errorTone = await page.evaluate(() => {
        const probe = document.createElement("span");
        probe.style.color = "var(--error)";
        document.body.append(probe);
        const c = getComputedStyle(probe).color;
        probe.remove();
        return c;
      });
      expect(colour).toBe(errorTone);
      const row = messages.getByRole("row").nth(1);
      await expect.poll(() => row.textContent()).toContain("Failed (503)the receiver answered 503: maintenance");
      expect(await row.locator(".status--error").count()).toBe(1);
      expect(await row.locator(".status--ok").count()).toBe(0);
    } finally {
      status = 200;
    }

    for (const [width, height] of [[1440, 900], [390, 844]] as const) {
      await page.setViewportSize({ width, height });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `page scrolls sideways at ${width}`).toBeLessThanOrEqual(0);
      await page.screenshot({ path: path.join(SHOTS, `notifications-${width}.png`), fullPage: true });
    }
    // The one error the browser logs is the 503 test's own 502 answer.
    expect(errors.filter((e) => !/502/.test(e))).toEqual([]);
  }, 120_000);

  it("a viewer sees the screen without the test button", async () => {
    const { page } = await e2e.openPage();
    await e2e.signInAs(page, "viewer", "Notifications");
    const webhook = page.getByRole("region", { name: "Webhook" });
    await expect.poll(() => webhook.textContent()).toContain("Destination");
    expect(await webhook.getByRole("button", { name: "Send test notification" }).count()).toBe(0);
  });
});
