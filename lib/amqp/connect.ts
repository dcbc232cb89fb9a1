/**
 * Connecting to RabbitMQ (amqplib) with a bounded handshake, and short readable reasons for failures that
 * never carry the URL's password.
 */
import amqp, { type ChannelModel } from "amqplib";
import { parseAmqpTarget } from "./url";

export const CONNECT_TIMEOUT_MS = 5000;

/** Opens a connection to `url` (Keyward's own query parameters dropped); rejects with a readable reason. */
export async function connectAmqp(url: string, options: { timeoutMs?: number; name?: string } = {}): Promise<ChannelModel> {
  const target = parseAmqpTarget(url);
  try {
    const conn = await amqp.connect(target.connectUrl, {
      timeout: options.timeoutMs ?? CONNECT_TIMEOUT_MS,
      clientProperties: { connection_name: options.name ?? "keyward" },
    });
    // An 'error' event without a listener would crash the process; the 'close' that follows tells the owner.
    conn.on("error", () => {});
    return conn;
  } catch (err) {
    throw new Error(describeAmqpError(err, url), { cause: err });
  }
}

/**
 * A short reason for an amqplib failure (connection refused, login refused, unknown vhost, a channel
 * closed by the broker), with the URL's password, if it appears, replaced by `***`.
 */
export function describeAmqpError(err: unknown, url?: string): string {
  const e = err as { code?: string | number; message?: string };
  let host = "the broker";
  let vhost = "/";
  let password = "";
  if (url) {
    try {
      const t = parseAmqpTarget(url);
      host = t.host;
      vhost = t.vhost;
      password = decodeURIComponent(new URL(url).password);
    } catch {
      /* a malformed URL: keep the defaults */
    }
  }
  const raw = String(e?.message ?? err);
  let text: string;
  if (e?.code === "ECONNREFUSED") text = `connection refused by ${host}`;
  else if (e?.code === "ENOTFOUND" || e?.code === "EAI_AGAIN") text = `host not found: ${host}`;
  else if (e?.code === "ETIMEDOUT" || /timeout/i.test(raw)) text = `no answer from ${host} (timeout)`;
  else if (/ACCESS.REFUSED/.test(raw) && /login/i.test(raw)) text = `login refused by ${host}: check the user and password`;
  else if (/NOT_ALLOWED|530/.test(raw) && /vhost/i.test(raw)) text = `vhost "${vhost}" not found or not allowed for this user on ${host}`;
  else {
    // Channel and connection closes read "Channel closed by server: 404 (NOT-FOUND) with message "…"".
    const m = /with message "([^"]*)"/.exec(raw);
    text = m ? m[1] : raw;
  }
  if (password && password.length >= 3) text = text.split(password).join("***");
  return text.length > 500 ? `${text.slice(0, 499)}…` : text;
}

/** Connects, checks that `queue` exists, answers its ready messages; closes again. Rejects with the reason. */
export async function checkQueue(url: string, queue: string, timeoutMs = CONNECT_TIMEOUT_MS): Promise<{ messageCount: number; consumerCount: number }> {
  const conn = await connectAmqp(url, { timeoutMs, name: "keyward check" });
  try {
    const ch = await conn.createChannel();
    ch.on("error", () => {});
    try {
      return await ch.checkQueue(queue);
    } catch (err) {
      throw new Error(/404|NOT.FOUND/.test(String((err as Error).message)) ? `queue "${queue}" not found` : describeAmqpError(err, url), { cause: err });
    }
  } finally {
    await conn.close().catch(() => {});
  }
}
