/**
 * Secrets and destinations during a replay (issue 13, points 6 and 7): a running replay picks up the
 * source's current signing secret and destination at each batch (its progress says where it sends), and
 * after a rotation it signs with the old and the new secret (the spec's space-separated list) for the grace
 * period, then with the new one only. Receivers are test/setup/receiver.ts (standardwebhooks verify, plus a
 * hand-written HMAC over the bytes received), claiming through Keyward's real claim handlers.
 */
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { signWebhook } from "@/lib/replay/deliver";
import { startReplayWorker } from "@/lib/replay/executor";
import { createPreflight } from "@/lib/replay/preflight";
import { getReplay, startReplay } from "@/lib/replay/replays";
import { replayTarget, rotateSigningSecret, rotateSigningSecretRequest } from "@/lib/sources/signing-secret";
import { getSource, updateSource } from "@/lib/sources/sources";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { startReceiver, type Receiver } from "@/test/setup/receiver";
import { readyForReplay, seedDeadLetters } from "@/test/setup/replay";
import { startReplayRequest } from "@/lib/replay/schema";
import { parseInput } from "@/lib/http/validate";
import type { Json } from "@/test/setup/json";
import { useClaimApi } from "@/test/setup/claim-api";

/** How long and how often the tests look for a replay's progress (a bound on waiting, not a speed check). */
const POLL = { timeout: 30_000, interval: 25 };

const ACTOR = cliPrincipal();
const claimApi = useClaimApi();
const { receivers, workers } = claimApi;
let apiKey: string;

beforeAll(async () => {
  apiKey = (await makeApiKey(["claims:write"])).key;
});

async function receiver(source: string, secret?: string) {
  const r = await startReceiver({ keywardUrl: claimApi.url(), apiKey, source, secret });
  receivers.push(r);
  return r;
}

/** A source ready to replay to `rx`, `n` dead letters, and a running replay (slow: 2 items per batch, one at a time). */
async function slowReplay(n: number) {
  const source = await makeSource();
  const rx = await receiver(source);
  const secret = await readyForReplay(source, rx.url);
  rx.setSecret(secret);
  const events = Array.from({ length: n }, (_, i) => `evt-${i}-${uniq()}`);
  await seedDeadLetters(source, events);
  const pf = await createPreflight({ source }, ACTOR);
  const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 4, concurrency: 1 }), uniq("k"), ACTOR);
  workers.push(startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: 5000, log: () => {}, sources: () => [source] }));
  return { source, rx, events, replayId, secret };
}

const signatures = (rx: Receiver) => rx.deliveries.map((d) => d.headers["webhook-signature"].toString("latin1").split(" ").length);

describe("signing with several secrets", () => {
  it("one v1 signature per secret, space-separated; a receiver holding either secret verifies", () => {
    const [a, b] = ["whsec_" + Buffer.from("a".repeat(32)).toString("base64"), "whsec_" + Buffer.from("b".repeat(32)).toString("base64")];
    const body = '{"id":820982911946154508}';
    const h = signWebhook({ id: "evt_1", timestamp: new Date(), body, secret: [a, b] });
    expect(h["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
    expect(h["webhook-signature"].split(" ")[0]).toBe(signWebhook({ id: "evt_1", timestamp: new Date(Number(h["webhook-timestamp"]) * 1000), body, secret: a })["webhook-signature"]);
    for (const s of [a, b]) expect(() => new Webhook(s).verify(body, h)).not.toThrow();
    const c = "whsec_" + Buffer.from("c".repeat(32)).toString("base64");
    expect(() => new Webhook(c).verify(body, h)).toThrow(/signature/i);
    expect(() => signWebhook({ id: "evt_1", timestamp: new Date(), body, secret: [] })).toThrow(/whsec_/);
  });
});

describe("rotation grace period", () => {
  it("keeps the previous secret signing for 24 h by default, for graceSeconds when given, not at all with 0; then only the new one", async () => {
    const source = await makeSource();
    await updateSource(source, { replayDestination: "https://example.test/hooks" }, ACTOR);
    const first = await rotateSigningSecret(source, ACTOR);
    expect(first.graceUntil).toBeNull(); // nothing to overlap with
    expect((await replayTarget(source)).secrets).toEqual([first.secret]);

    const second = await rotateSigningSecret(source, ACTOR);
    const [{ hours }] = await sql<{ hours: number }>(
      "SELECT extract(epoch FROM signing_secret_grace_until - signing_secret_set_at)::float8 / 3600 AS hours FROM sources WHERE name = $1",
      [source],
    );
    expect(hours).toBe(24);
    expect(await replayTarget(source)).toMatchObject({ secret: second.secret, secrets: [second.secret, first.secret], graceUntil: new Date(second.graceUntil!) });
    expect((await getSource(source)).signingSecretGraceUntil?.toISOString()).toBe(second.graceUntil);

    // The grace period over (by the database clock): only the current secret signs.
    await sql("UPDATE sources SET signing_secret_grace_until = now() - interval '1 second' WHERE name = $1", [source]);
    expect(await replayTarget(source)).toMatchObject({ secrets: [second.secret], graceUntil: null });

    const third = await rotateSigningSecret(source, ACTOR, { graceSeconds: 90 });
    expect(Date.parse(third.graceUntil!) - Date.parse(third.setAt)).toBe(90_000);
    expect((await replayTarget(source)).secrets).toEqual([third.secret, second.secret]);
    const fourth = await rotateSigningSecret(source, ACTOR, { graceSeconds: 0 });
    expect(fourth.graceUntil).toBeNull();
    expect((await replayTarget(source)).secrets).toEqual([fourth.secret]);
    const [row] = await sql<{ prev: string | null }>("SELECT signing_secret_prev_enc AS prev FROM sources WHERE name = $1", [source]);
    expect(row.prev).toBeNull();

    for (const bad of [{ graceSeconds: -1 }, { graceSeconds: 31 * 86400 }, { graceSeconds: 1.5 }, { grace: 1 }]) {
      expect(() => parseInput(rotateSigningSecretRequest, bad)).toThrow(expect.objectContaining({ status: 422 }));
    }
    const actions = await sql<{ detail: Json }>(
      "SELECT detail FROM audit_events WHERE kind = 'operator' AND source = $1 AND detail->>'action' = 'source.signing_secret.rotate' ORDER BY at",
      [source],
    );
    expect(actions.map((a) => a.detail.after.graceUntil ?? null)).toEqual([null, second.graceUntil, third.graceUntil, null]);
  });
});

describe("a running replay", () => {
  it("after a rotation signs with both secrets (a receiver on either verifies), so switching loses nothing; after the grace, only the new", async () => {
    const { source, rx, events, replayId } = await slowReplay(12);
    await expect.poll(() => rx.deliveries.length, { ...POLL, message: "two deliveries" }).toBeGreaterThanOrEqual(2);
    const rotated = await rotateSigningSecret(source, ACTOR); // default grace: 24 h
    // The receiver still holds the old secret: the next batches carry both signatures and verify.
    await expect.poll(() => signatures(rx), { ...POLL, message: "a delivery signed twice" }).toContain(2);
    const firstDouble = signatures(rx).indexOf(2);
    rx.setSecret(rotated.secret); // the receiver switches at some moment of the grace period
    await expect.poll(() => rx.deliveries.length, { ...POLL, message: "two more deliveries" }).toBeGreaterThanOrEqual(firstDouble + 3);
    await sql("UPDATE sources SET signing_secret_grace_until = now() WHERE name = $1", [source]);
    const lapsedAt = rx.deliveries.length;
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).toBe("completed");

    const r = await getReplay(replayId);
    expect(r.counts).toMatchObject({ delivered: 12, failed: 0 });
    expect(rx.snapshot().badSignatures).toBe(0);
    expect(rx.deliveries.every((d) => d.verified && d.handVerified)).toBe(true);
    for (const e of events) expect(rx.timesProcessed(e)).toBe(1);
    const counts = signatures(rx);
    expect(counts.slice(0, 2)).toEqual([1, 1]); // before the rotation: the one secret
    expect(counts.slice(firstDouble, firstDouble + 3).every((n) => n === 2)).toBe(true);
    // A batch leased before the grace ended may still carry both; from the batch after, one.
    expect(counts.at(-1)).toBe(1);
    expect(counts.slice(lapsedAt + 2).every((n) => n === 1)).toBe(true);
  });

  it("picks up a new destination at the next batch and shows where it sends; each event is processed once overall", async () => {
    const { source, rx: a, events, replayId, secret } = await slowReplay(10);
    await expect.poll(async () => (await getReplay(replayId)).destination, { ...POLL, message: "the progress names the destination" }).toBe(a.url);
    await expect.poll(() => a.deliveries.length, { ...POLL, message: "two deliveries to A" }).toBeGreaterThanOrEqual(2);
    const b = await receiver(source, secret);
    await updateSource(source, { replayDestination: b.url }, ACTOR);
    await expect.poll(async () => (await getReplay(replayId)).destination, { ...POLL, message: "the progress names B" }).toBe(b.url);
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).toBe("completed");
    const r = await getReplay(replayId);
    expect(r.counts).toMatchObject({ delivered: 10, failed: 0 });
    expect(r.destination).toBe(b.url);
    expect(a.deliveries.length).toBeGreaterThanOrEqual(2);
    expect(b.deliveries.length).toBeGreaterThanOrEqual(1);
    expect(a.deliveries.length + b.deliveries.length).toBe(10);
    for (const e of events) expect(a.timesProcessed(e) + b.timesProcessed(e)).toBe(1);
  });

  it("a rotation with no grace: later batches are signed with the new secret only (a receiver that switched verifies them)", async () => {
    const { source, rx, replayId } = await slowReplay(8);
    await expect.poll(() => rx.deliveries.length, { ...POLL, message: "two deliveries" }).toBeGreaterThanOrEqual(2);
    const rotated = await rotateSigningSecret(source, ACTOR, { graceSeconds: 0 });
    const at = rx.deliveries.length;
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).not.toBe("running");
    // Items of the batch in flight at the rotation were signed with the old secret; every later one with the new.
    const later = rx.deliveries.slice(at + 2);
    expect(later.length).toBeGreaterThan(0);
    const key = (s: string) => new Webhook(s);
    for (const d of later) {
      const headers = Object.fromEntries(["webhook-id", "webhook-timestamp", "webhook-signature"].map((h) => [h, d.headers[h].toString("latin1")]));
      expect(() => key(rotated.secret).verify(d.body.toString("utf8"), headers, { jsonParse: false })).not.toThrow();
    }
  });
});
