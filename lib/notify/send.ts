/**
 * Sending one notification to KEYWARD_NOTIFY_URL: the message as the format wants it (renderMessage, pure)
 * and one POST with a 10 s timeout (postMessage).
 *
 * - `slack`: `{"text": "…"}`, what Slack's incoming webhooks (and Mattermost's, Rocket.Chat's, Discord's
 *   /slack endpoint) take.
 * - `standard`: a JSON event `{"type": "keyward.condition.firing" | ….reminder | ….resolved | "keyward.test",
 *   "timestamp", "data": {…}}` signed per Standard Webhooks (webhook-id, webhook-timestamp,
 *   webhook-signature, with the standardwebhooks package) with KEYWARD_NOTIFY_SECRET.
 * A 2xx answer is a delivery; anything else (or no answer) is a failure, recorded and retried by the
 * evaluator at its next pass.
 */
import "server-only";
import { randomUUID } from "node:crypto";
import { Webhook } from "standardwebhooks";
import type { NotifyConfig } from "./config";
import type { ActiveCondition } from "./decide";
import type { MessageKind } from "./schema";

export const SEND_TIMEOUT_MS = 10_000;

export type Message = {
  kind: MessageKind;
  /** The condition (null for a test). */
  condition: ActiveCondition | null;
  /** When the condition began firing (resolved: and for how long it fired). */
  since: Date | null;
  at: Date;
  /** Who asked for a test. */
  actor?: string;
};

const TITLES: Record<MessageKind, string> = { firing: "Firing", reminder: "Still firing", resolved: "Resolved", test: "Test" };
const ICONS: Record<MessageKind, string> = { firing: ":rotating_light:", reminder: ":hourglass:", resolved: ":white_check_mark:", test: ":wave:" };

function duration(ms: number): string {
  const m = Math.round(ms / 60_000);
  if (m < 1) return "under a minute";
  if (m < 120) return `${m} min`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h} h` : `${Math.round(h / 24)} d`;
}

/** The body to POST, and its event type (Standard Webhooks) for the headers. Pure. */
export function renderMessage(m: Message, config: Pick<NotifyConfig, "format" | "consoleUrl">): { body: string; type: string } {
  const type = m.kind === "test" ? "keyward.test" : `keyward.condition.${m.kind}`;
  const link = m.condition?.path ? `${config.consoleUrl}${m.condition.path}` : null;
  const summary =
    m.kind === "test"
      ? `Test notification from Keyward${m.actor ? `, sent by ${m.actor}` : ""}: notifications reach this destination.`
      : m.condition!.summary;
  if (config.format === "slack") {
    const lines = [`${ICONS[m.kind]} *Keyward — ${TITLES[m.kind]}*: ${summary}`];
    if (m.kind === "resolved" && m.since) lines.push(`Fired for ${duration(m.at.getTime() - m.since.getTime())}.`);
    else if (m.kind === "reminder" && m.since) lines.push(`Firing for ${duration(m.at.getTime() - m.since.getTime())}.`);
    if (link) lines.push(`<${link}|Open in the console>`);
    return { body: JSON.stringify({ text: lines.join("\n") }), type };
  }
  const data = {
    kind: m.kind,
    summary,
    condition: m.condition ? { key: m.condition.key, kind: m.condition.kind, source: m.condition.source } : null,
    since: m.since?.toISOString() ?? null,
    url: link,
    ...(m.actor ? { actor: m.actor } : {}),
  };
  return { body: JSON.stringify({ type, timestamp: m.at.toISOString(), data }), type };
}

export type SendResult = { ok: boolean; status: number | null; error: string | null; ms: number };

/** POSTs the message; never throws (a failure is the result). */
export async function postMessage(m: Message, config: NotifyConfig): Promise<SendResult> {
  const { body } = renderMessage(m, config);
  const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "Keyward-Notifications" };
  if (config.format === "standard") {
    const id = `msg_${randomUUID()}`;
    headers["webhook-id"] = id;
    headers["webhook-timestamp"] = String(Math.floor(m.at.getTime() / 1000));
    headers["webhook-signature"] = new Webhook(config.secret!).sign(id, m.at, body);
  }
  const started = performance.now();
  try {
    const res = await fetch(config.url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(SEND_TIMEOUT_MS) });
    const text = await res.text().catch(() => "");
    const ms = Math.round(performance.now() - started);
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status, error: null, ms };
    return { ok: false, status: res.status, error: `the receiver answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ""}`, ms };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const reason = e.name === "TimeoutError" ? `no answer within ${SEND_TIMEOUT_MS / 1000} s` : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { ok: false, status: null, error: `not delivered: ${reason}`, ms: Math.round(performance.now() - started) };
  }
}
