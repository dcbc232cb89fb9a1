/**
 * Starting, reading and steering replays through the real route handlers (an operator's API key):
 * Idempotency-Key semantics, every refusal with its status and code, the state machine, the listing, and
 * the operator action log. No deliveries happen here (no worker runs); executor.test.ts delivers.
 */
import { describe, expect, it } from "vitest";
import { POST as startRoute, GET as listRoute } from "@/app/api/v1/replays/route";
import { GET as getRoute } from "@/app/api/v1/replays/[id]/route";
import { POST as pauseRoute } from "@/app/api/v1/replays/[id]/pause/route";
import { POST as resumeRoute } from "@/app/api/v1/replays/[id]/resume/route";
import { POST as cancelRoute } from "@/app/api/v1/replays/[id]/cancel/route";
import { POST as preflightRoute } from "@/app/api/v1/replays/preflight/route";
import { GET as deadLettersRoute } from "@/app/api/v1/dead-letters/route";
import { GET as deadLetterRoute } from "@/app/api/v1/dead-letters/[id]/route";
import { GET as preflightGetRoute } from "@/app/api/v1/replays/preflight/[id]/route";
import * as replaysModule from "@/app/api/v1/replays/route";
import { buildOpenApiDocument, operationsOf } from "@/lib/openapi/document";
import { claimEvent } from "@/lib/claims/claim";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { isErrorBody, makeApiKey } from "@/test/setup/http";
import { readyForReplay, seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";
import type { Json } from "@/test/setup/json";

type Handler = (req: Request, ctx?: { params: Promise<Record<string, string>> }) => Promise<Response>;

async function call(handler: Handler, o: { method?: string; path?: string; key?: string; body?: unknown; headers?: Record<string, string>; params?: Record<string, string> }) {
  const headers: Record<string, string> = { ...o.headers };
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  if (o.body !== undefined) headers["content-type"] = "application/json";
  const res = await handler(
    new Request(`http://localhost${o.path ?? "/api/v1/replays"}`, {
      method: o.method ?? (o.body === undefined ? "GET" : "POST"),
      headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
    }),
    { params: Promise.resolve(o.params ?? {}) },
  );
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const operatorKey = async () => (await makeApiKey(["operator"])).key;

/** A source with a destination and secret, dead letters in four categories, and a fresh preflight. */
async function setup(key: string, o: { window?: number } = {}) {
  const source = await makeSource(7 * 86400);
  await readyForReplay(source, "http://127.0.0.1:9/never-called");
  const alive = `alive-${uniq()}`;
  const expiring = `expiring-${uniq()}`;
  const processed = `processed-${uniq()}`;
  const fresh = `fresh-${uniq()}`;
  const flight = `flight-${uniq()}`;
  for (const e of [alive, expiring, processed]) await claimEvent({ source, eventId: e, eventType: "t" });
  await claimEvent({ source, eventId: flight, eventType: "t", leaseSeconds: 600 });
  await setKeyExpiry(source, expiring, 30);
  await setKeyExpiry(source, processed, -30);
  await seedDeadLetters(source, [alive, expiring, processed, fresh, flight]);
  const pf = await call(preflightRoute, { key, body: { source, replayWindowSeconds: o.window ?? 3600 } });
  expect(pf.status).toBe(201);
  expect(pf.body.counts).toMatchObject({ alive: 1, expiring: 1, expired_processed: 1, never_processed: 1, in_flight: 1 });
  return { source, preflightId: pf.body.preflightId as string, events: { alive, expiring, processed, fresh, flight } };
}

const start = (key: string, body: unknown, idem: string | null = uniq("idem")) =>
  call(startRoute, { key, body, headers: idem === null ? {} : { "idempotency-key": idem } });

describe("POST /api/v1/replays", () => {
  it("starts a replay (202), holds its dead letters, records the start; the same key and body again → the same replay", async () => {
    const key = await operatorKey();
    const { source, preflightId, events } = await setup(key);
    const idem = uniq("idem");
    const body = { preflightId, include: ["alive", "never_processed"] };
    const first = await start(key, body, idem);
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ replayId: expect.any(String), total: 2 });
    const again = await start(key, { ...body, include: ["never_processed", "alive", "alive"] }, idem);
    expect(again).toEqual(first);
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM replays WHERE idempotency_key = $1", [idem]);
    expect(n).toBe(1);

    const statuses = await sql<{ event_id: string; status: string }>("SELECT event_id, status FROM dead_letters WHERE source = $1", [source]);
    const st = Object.fromEntries(statuses.map((s) => [s.event_id, s.status]));
    expect(st).toEqual({ [events.alive]: "replaying", [events.fresh]: "replaying", [events.expiring]: "pending", [events.processed]: "pending", [events.flight]: "pending" });

    const got = await call(getRoute, { key, path: `/api/v1/replays/${first.body.replayId}`, params: { id: first.body.replayId } });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      id: first.body.replayId,
      source,
      status: "running",
      preflightId,
      include: ["alive", "never_processed"],
      forced: false,
      forceReason: null,
      ratePerSecond: 50,
      concurrency: 4,
      total: 2,
      finishedAt: null,
      counts: { pending: 2, delivering: 0, delivered: 0, failed: 0, skipped_unsafe: 0, cancelled: 0 },
      failures: [],
    });
    expect(got.body.createdBy).toMatch(/^apikey:/);
    expect(got.body.items.map((i: { eventId: string }) => i.eventId).sort()).toEqual([events.alive, events.fresh].sort());

    const [action] = await sql<{ detail: Json }>(
      "SELECT detail FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'replay.start' AND detail->'target'->>'id' = $1",
      [first.body.replayId],
    );
    expect(action.detail.after).toMatchObject({ preflightId, total: 2, forced: false, byCategory: { alive: 1, never_processed: 1 } });

    // A second replay of the same preflight finds those letters taken.
    const second = await start(key, { preflightId, include: ["alive"] });
    expect(second.status).toBe(422);
    expect(second.body.error.code).toBe("nothing_to_replay");
  });

  it("two concurrent requests with one key start one replay", async () => {
    const key = await operatorKey();
    const { preflightId } = await setup(key);
    const idem = uniq("idem");
    const body = { preflightId, include: ["alive", "never_processed"] };
    const [a, b] = await Promise.all([start(key, body, idem), start(key, body, idem)]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body.replayId).toBe(b.body.replayId);
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM replays WHERE preflight_id = $1", [preflightId]);
    expect(n).toBe(1);
  });

  it("the same key with a different body → 422 idempotency_key_reused; a missing key → 422", async () => {
    const key = await operatorKey();
    const { preflightId } = await setup(key);
    const idem = uniq("idem");
    expect((await start(key, { preflightId, include: ["alive"] }, idem)).status).toBe(202);
    const reused = await start(key, { preflightId, include: ["alive"], ratePerSecond: 10 }, idem);
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe("idempotency_key_reused");
    const missing = await start(key, { preflightId, include: ["never_processed"] }, null);
    expect(missing.status).toBe(422);
    expect(missing.body.error.message).toMatch(/Idempotency-Key/);
    expect((await start(key, { preflightId, include: ["never_processed"] }, "x".repeat(256))).status).toBe(422);
  });

  it("refusals: stale 409, expiring without extend 409, expired_processed without a reason 422, in_flight 422, bad bodies 422", async () => {
    const key = await operatorKey();
    const { preflightId } = await setup(key);
    const cases: [unknown, number, string][] = [
      [{ preflightId, include: ["expiring"] }, 409, "extension_required"],
      [{ preflightId, include: ["alive", "expired_processed"] }, 422, "force_required"],
      [{ preflightId, include: ["expired_processed"], force: { reason: "short" } }, 422, "invalid_request"],
      [{ preflightId, include: ["in_flight"] }, 422, "in_flight_not_replayable"],
      [{ preflightId, include: [] }, 422, "invalid_request"],
      [{ preflightId, include: ["everything"] }, 422, "invalid_request"],
      [{ preflightId, include: ["alive"], ratePerSecond: 501 }, 422, "invalid_request"],
      [{ preflightId, include: ["alive"], concurrency: 0 }, 422, "invalid_request"],
      [{ preflightId: "nope", include: ["alive"] }, 422, "invalid_request"],
      [{ preflightId: "00000000-0000-4000-8000-000000000000", include: ["alive"] }, 404, "preflight_not_found"],
    ];
    for (const [body, status, code] of cases) {
      const res = await start(key, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(isErrorBody(res.body)).toBe(true);
      expect(res.body.error.code, JSON.stringify(body)).toBe(code);
    }
    await sql("UPDATE replay_preflights SET valid_until = now() - interval '1 second' WHERE id = $1", [preflightId]);
    const stale = await start(key, { preflightId, include: ["alive"] });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("preflight_stale");
    // Nothing was started by any of them.
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM replays WHERE preflight_id = $1", [preflightId]);
    expect(n).toBe(0);
  });

  it("a forced replay of expired_processed items records the reason; expiring is accepted after an extend", async () => {
    const key = await operatorKey();
    const { preflightId } = await setup(key);
    const { POST: extendRoute } = await import("@/app/api/v1/replays/preflight/[id]/extend/route");
    const ext = await call(extendRoute, { key, body: {}, path: `/x/${preflightId}/extend`, params: { id: preflightId } });
    expect(ext.status).toBe(200);
    expect(ext.body.extended).toBe(1);
    const reason = "customer asked for the receipts again";
    const res = await start(key, { preflightId, include: ["expiring", "alive", "expired_processed"], force: { reason } });
    // after the extend the expiring item is alive: two alive and the forced expired_processed one
    expect(res.status).toBe(202);
    expect(res.body.total).toBe(3);
    const [row] = await sql<{ forced: boolean; force_reason: string }>("SELECT forced, force_reason FROM replays WHERE id = $1", [res.body.replayId]);
    expect(row).toEqual({ forced: true, force_reason: reason });
    const [action] = await sql<{ detail: Json }>(
      "SELECT detail FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'replay.start' AND detail->'target'->>'id' = $1",
      [res.body.replayId],
    );
    expect(action.detail).toMatchObject({ reason, after: { forced: true } });
  });

  it("409 when the source has no destination or no signing secret", async () => {
    const key = await operatorKey();
    const source = await makeSource();
    await seedDeadLetters(source, [uniq("e")]);
    const pf = await call(preflightRoute, { key, body: { source } });
    const res = await start(key, { preflightId: pf.body.preflightId, include: ["never_processed"] });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("replay_destination_missing");
  });
});

describe("pause, resume, cancel", () => {
  it("follows the state machine, 409 otherwise; cancel settles the items and frees their dead letters; each is recorded", async () => {
    const key = await operatorKey();
    const { source, preflightId } = await setup(key);
    const { body } = await start(key, { preflightId, include: ["alive", "never_processed"] });
    const id = body.replayId as string;
    const act = (h: Handler, name: string) => call(h, { key, body: {}, path: `/api/v1/replays/${id}/${name}`, params: { id } });

    expect((await act(resumeRoute, "resume")).status).toBe(409);
    const paused = await act(pauseRoute, "pause");
    expect(paused.status).toBe(200);
    expect(paused.body.status).toBe("paused");
    expect((await act(pauseRoute, "pause")).body.error.code).toBe("invalid_state");
    expect((await act(resumeRoute, "resume")).body.status).toBe("running");
    const cancelled = await act(cancelRoute, "cancel");
    expect(cancelled.body).toMatchObject({ status: "cancelled", counts: { cancelled: 2, pending: 0 } });
    expect(cancelled.body.finishedAt).not.toBeNull();
    for (const [h, n] of [[pauseRoute, "pause"], [resumeRoute, "resume"], [cancelRoute, "cancel"]] as const) {
      expect((await act(h, n)).status).toBe(409);
    }
    const letters = await sql<{ status: string }>("SELECT status FROM dead_letters WHERE source = $1", [source]);
    expect(letters.every((l) => l.status === "pending")).toBe(true);
    const replayed = await sql<{ detail: Json }>("SELECT detail FROM audit_events WHERE source = $1 AND kind = 'replayed'", [source]);
    expect(replayed.map((r) => r.detail.outcome)).toEqual(["cancelled", "cancelled"]);
    const actions = await sql<{ a: string }>(
      "SELECT detail->>'action' AS a FROM audit_events WHERE kind = 'operator' AND detail->'target'->>'id' = $1 ORDER BY at, id",
      [id],
    );
    expect(actions.map((x) => x.a)).toEqual(["replay.start", "replay.pause", "replay.resume", "replay.cancel"]);

    for (const h of [pauseRoute, getRoute]) {
      const missing = await call(h, { key, params: { id: "nope" }, ...(h === pauseRoute ? { body: {} } : {}) });
      expect(missing.status).toBe(404);
    }
  });
});

describe("GET /api/v1/replays and GET /api/v1/dead-letters", () => {
  it("lists replays newest first with a cursor, filtered by source and status", async () => {
    const key = await operatorKey();
    const { source, preflightId } = await setup(key);
    const ids: string[] = [];
    for (const include of [["alive"], ["never_processed"]]) ids.push((await start(key, { preflightId, include })).body.replayId);
    const page1 = await call(listRoute, { key, path: `/api/v1/replays?source=${source}&limit=1` });
    expect(page1.status).toBe(200);
    expect(page1.body.items.map((r: { id: string }) => r.id)).toEqual([ids[1]]);
    const page2 = await call(listRoute, { key, path: `/api/v1/replays?source=${source}&limit=1&cursor=${page1.body.next}` });
    expect(page2.body.items.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    expect(page2.body.next).toBeNull();
    const none = await call(listRoute, { key, path: `/api/v1/replays?source=${source}&status=completed` });
    expect(none.body.items).toEqual([]);
    expect((await call(listRoute, { key, path: "/api/v1/replays?status=bogus" })).status).toBe(422);
    expect((await call(listRoute, { key, path: "/api/v1/replays?cursor=bogus" })).status).toBe(422);
  });

  it("filters replays by outcome (succeeded, partial, failed, cancelled) and state (running, finished); 422 for any other value", async () => {
    const key = await operatorKey();
    const source = await makeSource(7 * 86400);
    await readyForReplay(source, "http://127.0.0.1:9/never-called");
    /** A replay of `n` fresh never-processed letters; `settle` gives each item its outcome and the replay its status. */
    const replayOf = async (n: number, status: string, outcomes: string[]) => {
      await seedDeadLetters(source, Array.from({ length: n }, () => `fresh-${uniq()}`));
      const pf = await call(preflightRoute, { key, body: { source } });
      expect(pf.status).toBe(201);
      const started = await start(key, { preflightId: pf.body.preflightId, include: ["never_processed"] });
      expect(started.body.total).toBe(n);
      const id = started.body.replayId as string;
      await sql(
        `UPDATE replay_items i SET outcome = ($2::text[])[o.n] FROM (SELECT dead_letter_id, row_number() OVER (ORDER BY seq) AS n FROM replay_items WHERE replay_id = $1) o
         WHERE i.replay_id = $1 AND i.dead_letter_id = o.dead_letter_id`,
        [id, outcomes],
      );
      await sql(`UPDATE replays SET status = $2, finished_at = CASE WHEN $2 IN ('completed', 'cancelled') THEN now() END WHERE id = $1`, [id, status]);
      return id;
    };
    const ids = {
      succeeded: await replayOf(2, "completed", ["delivered", "delivered"]),
      partial: await replayOf(2, "completed", ["delivered", "failed"]),
      failed: await replayOf(2, "completed", ["failed", "skipped_unsafe"]),
      cancelled: await replayOf(1, "cancelled", ["delivered"]),
      running: await replayOf(1, "running", ["pending"]),
      paused: await replayOf(1, "paused", ["failed"]),
    };
    const list = async (q: string) => {
      const res = await call(listRoute, { key, path: `/api/v1/replays?source=${source}&${q}` });
      expect(res.status).toBe(200);
      return res.body.items as { id: string; outcome: string | null; status: string }[];
    };
    for (const outcome of ["succeeded", "partial", "failed", "cancelled"] as const) {
      const items = await list(`outcome=${outcome}`);
      expect(items.map((r) => r.id)).toEqual([ids[outcome]]);
      // The filter and the outcome the API reports are one decision.
      expect(items[0].outcome).toBe(outcome);
    }
    expect((await list("state=running")).map((r) => r.id)).toEqual([ids.paused, ids.running]);
    expect((await list("state=finished")).map((r) => r.id)).toEqual([ids.cancelled, ids.failed, ids.partial, ids.succeeded]);
    expect(await list("state=running&outcome=failed")).toEqual([]);
    // The OpenAPI document names both parameters with their values.
    const doc = buildOpenApiDocument(operationsOf([{ urlPattern: "/api/v1/replays", module: replaysModule }]), { version: "test" }) as {
      paths: Record<string, { get: { parameters: { name: string; schema: { enum?: string[] } }[] } }>;
    };
    const params = Object.fromEntries(doc.paths["/api/v1/replays"].get.parameters.map((p) => [p.name, p.schema.enum]));
    expect(params.outcome).toEqual(["succeeded", "partial", "failed", "cancelled"]);
    expect(params.state).toEqual(["running", "finished"]);
    for (const bad of ["outcome=ok", "outcome=completed", "state=paused", "outcome="]) {
      const res = await call(listRoute, { key, path: `/api/v1/replays?${bad}` });
      expect(res.status, bad).toBe(422);
      expect(isErrorBody(res.body)).toBe(true);
      expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toContain(bad.split("=")[0]);
    }
  });

  it("lists dead letters with key state, counts and key risk; pages without skips or repeats; both sorts", async () => {
    const key = await operatorKey();
    const { source, events } = await setup(key);
    const all = await call(deadLettersRoute, { key, path: `/api/v1/dead-letters?source=${source}` });
    expect(all.status).toBe(200);
    expect(all.body.counts).toMatchObject({ total: 5, bySource: [{ source, count: 5 }], byError: [{ error: "consumer crashed", count: 5 }] });
    // processed: expired key and processed → at risk; fresh: no key but never processed → safe, not counted;
    // expiring within 24 h: expiring (30 s)
    expect(all.body.counts.keyRisk).toEqual({ expired: 1, expiringSoon: 1 });
    const processedFlag = Object.fromEntries(all.body.items.map((i: Json) => [i.eventId, i.key.processed]));
    // processed is the verdict's (lib/keys/verdict.ts): a live key was claimed, so its event was processed too
    // (issue 23 §5: the API said false for a letter whose event page said "Processed").
    expect(processedFlag).toMatchObject({ [events.processed]: true, [events.fresh]: false, [events.alive]: true });
    const state = Object.fromEntries(all.body.items.map((i: Json) => [i.eventId, i.key.state]));
    expect(state).toEqual({ [events.alive]: "alive", [events.expiring]: "alive", [events.processed]: "expired", [events.fresh]: "none", [events.flight]: "in_flight" });

    for (const sort of ["failedAt", "keyExpiry"]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res: Json = await call(deadLettersRoute, {
          key,
          path: `/api/v1/dead-letters?source=${source}&limit=2&sort=${sort}${cursor ? `&cursor=${cursor}` : ""}`,
        });
        expect(res.status).toBe(200);
        seen.push(...res.body.items.map((i: Json) => i.eventId));
        cursor = res.body.next;
      } while (cursor);
      expect(seen.length, sort).toBe(5);
      expect(new Set(seen).size).toBe(5);
      if (sort === "keyExpiry") expect(seen.slice(0, 1)).toEqual([events.fresh]); // no key at all first
    }
    const filtered = await call(deadLettersRoute, { key, path: `/api/v1/dead-letters?source=${source}&status=delivered` });
    expect(filtered.body.items).toEqual([]);
    expect((await call(deadLettersRoute, { key, path: `/api/v1/dead-letters?status=nope` })).status).toBe(422);
    expect((await call(deadLettersRoute, { key, path: `/api/v1/dead-letters?cursor=xyz` })).status).toBe(422);
  });

  it("GET one dead letter (payload, key, last replay error) and one stored preflight; unknown ids are 404", async () => {
    const key = await operatorKey();
    const { source, preflightId, events } = await setup(key);
    const [row] = await sql<{ id: string }>("SELECT id FROM dead_letters WHERE source = $1 AND event_id = $2", [source, events.fresh]);
    const one = await call(deadLetterRoute, { key, params: { id: row.id } });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: row.id, source, eventId: events.fresh, status: "pending", lastReplayError: null, key: { state: "none", expiresAt: null } });
    // The payload as stored: the exact JSON text (seeded in-process, so serialized once at intake).
    const text = JSON.stringify({ id: events.fresh, n: 3 });
    expect(one.body).toMatchObject({ contentType: "application/json", payloadText: text, payloadBytes: Buffer.byteLength(text) });
    expect(Buffer.from(one.body.payloadBase64, "base64").toString("utf8")).toBe(text);
    const pf = await call(preflightGetRoute, { key, params: { id: preflightId } });
    expect(pf.status).toBe(200);
    expect(pf.body).toMatchObject({ preflightId, source, counts: { total: 5 } });
    for (const id of ["nope", "00000000-0000-4000-8000-000000000000"]) {
      expect((await call(deadLetterRoute, { key, params: { id } })).status).toBe(404);
      expect((await call(preflightGetRoute, { key, params: { id } })).status).toBe(404);
    }
  });
});
