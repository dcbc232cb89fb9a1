/**
 * Notifications (lib/notify) against a local receiver, on a database of this file's own (the evaluator
 * reads every source's conditions): the webhook fires once per condition (a stalled replay, keys at risk,
 * late duplicates, failing pruning), signed per Standard Webhooks (verified by the standardwebhooks
 * package and by a hand-written HMAC over the bytes received); a second pass sends nothing; a cleared
 * condition sends its resolved message; one that fires again within the throttle is held back until the
 * throttle has passed; a receiver that fails gets the message again at the next pass; two instances at once
 * send each message once (the lease); the Slack format posts {"text": …}; a test message reports the
 * receiver's answer, and a failure as 502.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { actorOf, cliPrincipal } from "@/lib/auth/principal";
import { claimEvent } from "@/lib/claims/claim";
import { claimRequest } from "@/lib/claims/schema";
import { parseInput } from "@/lib/http/validate";
import { KeywardError } from "@/lib/errors";
import type { NotifyConfig } from "@/lib/notify/config";
import { maskUrl } from "@/lib/notify/config";
import { decideNotifications, type ActiveCondition, type ConditionState } from "@/lib/notify/decide";
import { evaluateNotifications, notificationsJob } from "@/lib/notify/evaluate";
import { notificationStatus, sendTestNotification } from "@/lib/notify/status";
import { createPreflight } from "@/lib/replay/preflight";
import { startReplay } from "@/lib/replay/replays";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { handVerify } from "@/test/setup/receiver";
import { readyForReplay, seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";
import type { Json } from "@/test/setup/json";


const SECRET = `whsec_${Buffer.from("notification-test-secret-0123456789").toString("base64")}`;
const HOUR = 3_600_000;

type Received = { body: Buffer; headers: Record<string, Buffer>; json: Json; verified: boolean; handVerified: boolean };

/** A local receiver: keeps every request as received, verifies its signature, answers `status` (a knob). */
class NotificationReceiver {
  received: Received[] = [];
  status = 200;
  url = "";
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const headers: Record<string, Buffer> = {};
      for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers[req.rawHeaders[i].toLowerCase()] = Buffer.from(req.rawHeaders[i + 1], "latin1");
      let verified: boolean;
      try {
        new Webhook(SECRET).verify(body.toString("utf8"), {
          "webhook-id": String(req.headers["webhook-id"] ?? ""),
          "webhook-timestamp": String(req.headers["webhook-timestamp"] ?? ""),
          "webhook-signature": String(req.headers["webhook-signature"] ?? ""),
        });
        verified = true;
      } catch {
        verified = false;
      }
      this.received.push({ body, headers, json: JSON.parse(body.toString("utf8")), verified, handVerified: handVerify(SECRET, headers, body) });
      res.writeHead(this.status, { "content-type": "text/plain" });
      res.end(this.status === 200 ? "ok" : "receiver down for the test");
    });
  });
  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/T000/B000/secret-part`;
    return this;
  }
  /** What arrived since the last call. */
  take(): Received[] {
    return this.received.splice(0);
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

let receiver: NotificationReceiver;
let config: NotifyConfig;

beforeAll(async () => {
  receiver = await new NotificationReceiver().start();
  config = { url: receiver.url, format: "standard", secret: SECRET, intervalMs: 60_000, throttleMs: HOUR, consoleUrl: "https://keyward.example" };
});
afterAll(async () => {
  await receiver?.stop();
});

describe("decideNotifications (pure)", () => {
  const t0 = new Date("2026-12-06T10:00:00Z");
  const at = (ms: number) => new Date(t0.getTime() + ms);
  const cond = (key: string, summary = `${key} fires`): ActiveCondition => ({ key, kind: "keys_at_risk", source: "s", summary, path: null });
  const state = (key: string, o: Partial<ConditionState>): ConditionState => ({
    key, kind: "keys_at_risk", source: "s", summary: `${key} fires`, firing: true, since: t0, announced: true, lastSentAt: t0, ...o,
  });

  it("announces a new condition, reminds once per throttle, resolves what was announced, clears silently what was not", () => {
    expect(decideNotifications([], [cond("a")], t0, HOUR).map((s) => [s.send, s.next.announced])).toEqual([["firing", true]]);
    expect(decideNotifications([state("a", {})], [cond("a")], at(HOUR - 1), HOUR)).toEqual([]);
    expect(decideNotifications([state("a", {})], [cond("a")], at(HOUR), HOUR).map((s) => s.send)).toEqual(["reminder"]);
    expect(decideNotifications([state("a", {})], [cond("a")], at(HOUR), 0)).toEqual([]); // no throttle, no reminders
    expect(decideNotifications([state("a", {})], [], at(1), HOUR).map((s) => [s.send, s.next.firing])).toEqual([["resolved", false]]);
    expect(decideNotifications([state("a", { announced: false })], [], at(1), HOUR).map((s) => [s.send, s.next.firing])).toEqual([[null, false]]);
    expect(decideNotifications([state("a", { firing: false })], [], at(1), HOUR)).toEqual([]);
  });

  it("holds back a condition that fires again within the throttle, and announces it once the throttle has passed", () => {
    const cleared = state("a", { firing: false, announced: false, since: at(10), lastSentAt: t0 });
    const held = decideNotifications([cleared], [cond("a")], at(HOUR / 2), HOUR);
    expect(held.map((s) => [s.send, s.next.firing, s.next.announced])).toEqual([[null, true, false]]);
    expect(decideNotifications([held[0].next], [cond("a")], at(HOUR - 1), HOUR)).toEqual([]);
    const later = decideNotifications([held[0].next], [cond("a")], at(HOUR), HOUR);
    expect(later.map((s) => [s.send, s.next.since.toISOString()])).toEqual([["firing", at(HOUR / 2).toISOString()]]);
    // Its summary follows the figures without a message.
    expect(decideNotifications([held[0].next], [cond("a", "a fires harder")], at(HOUR - 1), HOUR).map((s) => [s.send, s.next.summary])).toEqual([
      [null, "a fires harder"],
    ]);
  });

  it("masks the webhook URL's path (it is often the secret)", () => {
    expect(maskUrl("https://hooks.slack.com/services/T0/B0/XyZ")).toBe("https://hooks.slack.com/…");
    expect(maskUrl("https://ops.example:8443/")).toBe("https://ops.example:8443");
  });
});

describe("the evaluator against a local receiver", () => {
  let processed: string; // source with a processed event whose key is gone
  let late: string;
  let replayed: string;

  it("fires once per condition, signed per Standard Webhooks; the next pass sends nothing", async () => {
    processed = await makeSource();
    const claim = await claimEvent(parseInput(claimRequest, { source: processed, eventId: "evt-1", eventType: "t" }));
    expect(claim.outcome).toBe("claimed");
    await setKeyExpiry(processed, "evt-1", -60);
    await seedDeadLetters(processed, ["evt-1"]);

    late = await makeSource();
    await sql(
      `INSERT INTO late_duplicates (source, event_id, first_claim_at, late_claim_at, gap_seconds, key_state)
       VALUES ($1, 'twice', now() - interval '8 days', now() - interval '2 minutes', 691080, 'pruned')`,
      [late],
    );
    await sql(
      `INSERT INTO prune_runs (mode, trigger, started_at, finished_at, stopped, error)
       SELECT 'batch', 'schedule', now() - i * interval '1 minute', now() - i * interval '1 minute', 'error', 'permission denied for table dedup_keys'
       FROM generate_series(1, 2) i`,
    );
    // A replay no worker drives, started five minutes ago: stalled.
    replayed = await makeSource();
    await readyForReplay(replayed, "http://127.0.0.1:9/never");
    await seedDeadLetters(replayed, ["r-1", "r-2"]);
    const pf = await createPreflight({ source: replayed }, cliPrincipal());
    const { replayId } = await startReplay({ preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 50, concurrency: 1 }, uniq("k"), cliPrincipal());
    await sql("UPDATE replays SET running_since = running_since - interval '5 minutes', created_at = created_at - interval '5 minutes' WHERE id = $1", [replayId]);
    await sql("UPDATE replay_items SET next_attempt_at = next_attempt_at - interval '5 minutes' WHERE replay_id = $1", [replayId]);

    const first = await evaluateNotifications({ config });
    expect(first?.sent.map((s) => [s.kind, s.key, s.ok]).sort()).toEqual(
      [
        ["firing", `keys_at_risk:${processed}`, true],
        ["firing", `late_duplicates:${late}`, true],
        ["firing", "pruning_failing", true],
        ["firing", `replay_stalled:${replayId}`, true],
      ].sort(),
    );
    const got = receiver.take();
    expect(got).toHaveLength(4);
    for (const r of got) {
      expect(r.verified && r.handVerified, r.body.toString()).toBe(true);
      expect(r.json.type).toBe("keyward.condition.firing");
      expect(r.headers["content-type"].toString()).toBe("application/json");
    }
    const byKey = new Map(got.map((r) => [r.json.data.condition.key, r.json.data]));
    expect(byKey.get(`keys_at_risk:${processed}`)).toMatchObject({
      kind: "firing",
      summary: `Dead letters of source ${processed} have keys at risk: 1 processed event whose key is gone (a replay would process it twice)`,
      url: `https://keyward.example/replay?source=${processed}`,
      condition: { kind: "keys_at_risk", source: processed },
    });
    expect(byKey.get("pruning_failing").summary).toBe("Pruning of expired keys failed 2 times in a row: permission denied for table dedup_keys");
    expect(byKey.get(`late_duplicates:${late}`).summary).toMatch(/^1 event of source .* was processed twice in the last hour/);
    expect(byKey.get(`replay_stalled:${replayId}`)).toMatchObject({ url: `https://keyward.example/replays/${replayId}`, condition: { source: replayed } });

    expect((await evaluateNotifications({ config }))?.sent).toEqual([]);
    expect(receiver.take()).toEqual([]);
    const status = await notificationStatus();
    expect(status.conditions.filter((c) => c.firing && c.announced)).toHaveLength(4);
    expect(status.deliveries.filter((d) => d.kind === "firing" && d.ok)).toHaveLength(4);
  });

  it("a condition that clears sends its resolved message; firing again within the throttle is held back until it has passed", async () => {
    await sql("INSERT INTO prune_runs (mode, trigger, started_at, finished_at, stopped) VALUES ('batch', 'schedule', now(), now(), 'drained')");
    const cleared = await evaluateNotifications({ config });
    expect(cleared?.sent).toEqual([{ kind: "resolved", key: "pruning_failing", ok: true }]);
    const [resolved] = receiver.take();
    expect(resolved.json).toMatchObject({ type: "keyward.condition.resolved", data: { condition: { key: "pruning_failing" } } });

    await sql(
      `INSERT INTO prune_runs (mode, trigger, started_at, finished_at, stopped, error)
       SELECT 'batch', 'schedule', now() + i * interval '1 ms', now() + i * interval '1 ms', 'error', 'disk full' FROM generate_series(1, 2) i`,
    );
    expect((await evaluateNotifications({ config }))?.sent).toEqual([]);
    expect(receiver.take()).toEqual([]);
    const held = (await notificationStatus()).conditions.find((c) => c.key === "pruning_failing")!;
    expect([held.firing, held.announced]).toEqual([true, false]);

    // An hour later (the evaluation's clock moved on): the held-back firing goes out, the others are reminded once.
    const later = await evaluateNotifications({ config, now: new Date(Date.now() + HOUR + 1000) });
    expect(later?.sent.map((s) => `${s.kind} ${s.key.replace(/^replay_stalled:.*/, "replay_stalled:<id>")}`).sort()).toEqual(
      ["firing pruning_failing", `reminder keys_at_risk:${processed}`, `reminder late_duplicates:${late}`, "reminder replay_stalled:<id>"].sort(),
    );
    const sent = receiver.take();
    expect(sent.find((r) => r.json.data.condition.key === "pruning_failing")!.json.data.summary).toBe("Pruning of expired keys failed 2 times in a row: disk full");
  });

  it("a receiver that fails gets the message again at the next pass; nothing is recorded as announced meanwhile", async () => {
    const source = await makeSource();
    await sql(
      `INSERT INTO late_duplicates (source, event_id, first_claim_at, late_claim_at, gap_seconds, key_state)
       VALUES ($1, 'twice', now() - interval '8 days', now() - interval '1 minute', 691140, 'pruned')`,
      [source],
    );
    receiver.status = 500;
    try {
      const failed = await evaluateNotifications({ config });
      expect(failed?.sent).toEqual([{ kind: "firing", key: `late_duplicates:${source}`, ok: false }]);
      expect(receiver.take()).toHaveLength(1);
      const status = await notificationStatus();
      expect(status.conditions.find((c) => c.key === `late_duplicates:${source}`)).toBeUndefined();
      expect(status.deliveries[0]).toMatchObject({ kind: "firing", ok: false, status: 500, error: "the receiver answered 500: receiver down for the test" });
    } finally {
      receiver.status = 200;
    }
    const retried = await evaluateNotifications({ config });
    expect(retried?.sent).toEqual([{ kind: "firing", key: `late_duplicates:${source}`, ok: true }]);
    expect(receiver.take()).toHaveLength(1);
  });

  it("two instances evaluating at once send each message once (the job lease)", async () => {
    const source = await makeSource();
    await sql(
      `INSERT INTO late_duplicates (source, event_id, first_claim_at, late_claim_at, gap_seconds, key_state)
       VALUES ($1, 'twice', now() - interval '8 days', now() - interval '1 minute', 691140, 'pruned')`,
      [source],
    );
    const outcomes = await Promise.all([evaluateNotifications({ config }), evaluateNotifications({ config })]);
    // Either the passes overlapped (one found the lease held: null) or the second ran after the first had
    // recorded its message; both ways the condition's message went out once, from one of them.
    const sentIt = outcomes.flatMap((o) => o?.sent ?? []).filter((s) => s.key === `late_duplicates:${source}`);
    expect(sentIt).toEqual([{ kind: "firing", key: `late_duplicates:${source}`, ok: true }]);
    expect(receiver.take().map((r) => r.json.data.condition.key)).toEqual([`late_duplicates:${source}`]);
  });

  it("the Slack format posts {\"text\": …} with the summary and a link to the console", async () => {
    await sql("INSERT INTO prune_runs (mode, trigger, started_at, finished_at, stopped) VALUES ('batch', 'schedule', now() + interval '1 s', now() + interval '1 s', 'drained')");
    await evaluateNotifications({ config: { ...config, format: "slack", secret: undefined } });
    const [slack] = receiver.take();
    expect(Object.keys(slack.json)).toEqual(["text"]);
    expect(slack.json.text).toMatch(/^:white_check_mark: \*Keyward — Resolved\*: Pruning of expired keys failed 2 times in a row: disk full\nFired for .+\n<https:\/\/keyward\.example\/\|Open in the console>$/);
    expect(slack.headers["webhook-signature"]).toBeUndefined();
  });

  it("the registry's job sends with the server's settings (KEYWARD_NOTIFY_*), and is off without a URL", async () => {
    const saved = { ...process.env };
    try {
      delete process.env.KEYWARD_NOTIFY_URL;
      expect(notificationsJob().everyMs).toBe(0);
      Object.assign(process.env, { KEYWARD_NOTIFY_URL: receiver.url, KEYWARD_NOTIFY_SECRET: SECRET, KEYWARD_NOTIFY_INTERVAL_SECONDS: "30" });
      const job = notificationsJob();
      expect(job.everyMs).toBe(30_000);
      const source = await makeSource();
      await sql(
        `INSERT INTO late_duplicates (source, event_id, first_claim_at, late_claim_at, gap_seconds, key_state)
         VALUES ($1, 'twice', now() - interval '8 days', now() - interval '1 minute', 691140, 'pruned')`,
        [source],
      );
      await job.run(new AbortController().signal);
      const [msg] = receiver.take();
      expect(msg.verified).toBe(true);
      expect(msg.json.data.condition.key).toBe(`late_duplicates:${source}`);
    } finally {
      process.env = saved;
    }
  });
});

describe("a test message", () => {
  it("reports the receiver's answer; a failure is a 502 with it, recorded as not delivered and in the action log", async () => {
    const saved = { ...process.env };
    try {
      delete process.env.KEYWARD_NOTIFY_URL;
      await expect(sendTestNotification(cliPrincipal())).rejects.toMatchObject({ status: 409, code: "notifications_off" });
      Object.assign(process.env, { KEYWARD_NOTIFY_URL: receiver.url, KEYWARD_NOTIFY_SECRET: SECRET });
      const ok = await sendTestNotification(cliPrincipal());
      expect(ok).toMatchObject({ delivered: true, status: 200 });
      const [test] = receiver.take();
      expect(test.verified).toBe(true);
      expect(test.json).toMatchObject({ type: "keyward.test", data: { kind: "test", actor: actorOf(cliPrincipal()) } });

      receiver.status = 500;
      const err = await sendTestNotification(cliPrincipal()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(KeywardError);
      expect(err).toMatchObject({ status: 502, code: "notification_failed", details: { status: 500 } });
      const status = await notificationStatus();
      expect(status.deliveries.slice(0, 2).map((d) => [d.kind, d.ok, d.status])).toEqual([["test", false, 500], ["test", true, 200]]);
      expect(status.target).toBe(`${new URL(receiver.url).origin}/…`);
      const [action] = await sql<{ detail: { action: string; outcome: string } }>(
        "SELECT detail FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'notification.test' ORDER BY id DESC LIMIT 1",
      );
      expect(action.detail.outcome).toBe("failed");
    } finally {
      receiver.status = 200;
      process.env = saved;
    }
  });
});
