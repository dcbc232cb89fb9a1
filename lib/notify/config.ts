/** The notification webhook's settings (KEYWARD_NOTIFY_*, lib/config/env.ts), or null when it is off. */
import "server-only";
import { loadEnv } from "@/lib/config/env";
import type { NotifyFormat } from "./schema";

export type NotifyConfig = {
  url: string;
  format: NotifyFormat;
  /** whsec_… (format standard). */
  secret: string | undefined;
  intervalMs: number;
  throttleMs: number;
  /** KEYWARD_PUBLIC_URL (or http://HOSTNAME:PORT): the console links in messages. */
  consoleUrl: string;
};

export function notifyConfig(): NotifyConfig | null {
  const env = loadEnv();
  if (!env.KEYWARD_NOTIFY_URL) return null;
  return {
    url: env.KEYWARD_NOTIFY_URL,
    format: env.KEYWARD_NOTIFY_FORMAT ?? (env.KEYWARD_NOTIFY_SECRET ? "standard" : "slack"),
    secret: env.KEYWARD_NOTIFY_SECRET,
    intervalMs: env.KEYWARD_NOTIFY_INTERVAL_SECONDS * 1000,
    throttleMs: env.KEYWARD_NOTIFY_THROTTLE_SECONDS * 1000,
    consoleUrl: env.KEYWARD_PUBLIC_URL ?? `http://${env.HOSTNAME}:${env.PORT}`,
  };
}

/** The URL with its path and query hidden: `https://hooks.slack.com/…` (a webhook URL's path is often its secret). Pure. */
export function maskUrl(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname === "/" && !u.search ? "" : "/…"}`;
}
