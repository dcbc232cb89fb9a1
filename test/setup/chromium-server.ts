/**
 * Global set-up of the e2e tier: one headless Chromium for the whole tier, as a Playwright browser server;
 * each test file connects to it (launchChromium in browser.ts) and each test opens a fresh context (no cookies,
 * no storage), so files share the process, never a session. Closed when the tier ends.
 */
import type { TestProject } from "vitest/node";
import { launchChromiumServer } from "./browser";

export default async function setup(project: TestProject) {
  const server = await launchChromiumServer();
  project.provide("chromiumEndpoint", server.wsEndpoint());
  return async () => {
    await server.close();
  };
}

declare module "vitest" {
  export interface ProvidedContext {
    chromiumEndpoint: string;
  }
}
