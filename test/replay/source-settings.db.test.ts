/**
 * A source's replay destination and signing secret: set by admins, the secret shown once and stored
 * encrypted (never in a source's JSON), rotation recorded; dead-letter retention prunes settled letters only.
 */
import { describe, expect, it } from "vitest";
import { PATCH as patchSource, GET as getSourceRoute } from "@/app/api/v1/sources/[name]/route";
import { POST as rotateRoute } from "@/app/api/v1/sources/[name]/signing-secret/route";
import { cliPrincipal } from "@/lib/auth/principal";
import { listSources, updateSource } from "@/lib/sources/sources";
import { decryptSecret, encryptSecret, replayTarget, rotateSigningSecret } from "@/lib/sources/signing-secret";
import { pruneSettledDeadLetters } from "@/lib/deadletters/prune";
import { makeSource, sql } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { seedDeadLetters } from "@/test/setup/replay";
import { updateSourceRequest } from "@/lib/sources/schema";
import { parseInput } from "@/lib/http/validate";
import type { Json } from "@/test/setup/json";

const ACTOR = cliPrincipal();

describe("signing secret storage (pure)", () => {
  it("round-trips under the same auth secret, and not under another; each encryption differs", () => {
    const a = encryptSecret("whsec_abc", "k".repeat(32));
    expect(a).not.toContain("whsec_abc");
    expect(a).not.toBe(encryptSecret("whsec_abc", "k".repeat(32)));
    expect(decryptSecret(a, "k".repeat(32))).toBe("whsec_abc");
    expect(decryptSecret(a, "j".repeat(32))).toBeNull();
    expect(decryptSecret("garbage", "k".repeat(32))).toBeNull();
  });
});

describe("replay destination and signing secret", () => {
  it("rotates a whsec_ secret shown once, stored encrypted, recorded; sources never show it", async () => {
    const source = await makeSource();
    const first = await rotateSigningSecret(source, ACTOR);
    expect(first.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const [row] = await sql<{ signing_secret_enc: string; signing_secret_set_at: Date }>(
      "SELECT signing_secret_enc, signing_secret_set_at FROM sources WHERE name = $1",
      [source],
    );
    expect(row.signing_secret_enc).not.toContain(first.secret.slice(6));
    expect(row.signing_secret_set_at.toISOString()).toBe(first.setAt);
    const second = await rotateSigningSecret(source, ACTOR);
    expect(second.secret).not.toBe(first.secret);

    await updateSource(source, { replayDestination: "https://example.test/hooks" }, ACTOR);
    // The first secret keeps signing next to the second during the rotation's grace period (24 h by default).
    expect(await replayTarget(source)).toMatchObject({ url: "https://example.test/hooks", secret: second.secret, secrets: [second.secret, first.secret] });

    const listed = (await listSources()).find((s) => s.name === source)!;
    expect(listed).toMatchObject({ replayDestination: "https://example.test/hooks" });
    expect(JSON.stringify(listed)).not.toMatch(/signingSecretEnc|whsec_/);
    const actions = await sql<{ detail: Json }>(
      "SELECT detail FROM audit_events WHERE kind = 'operator' AND source = $1 AND detail->>'action' = 'source.signing_secret.rotate' ORDER BY at",
      [source],
    );
    expect(actions.map((a) => a.detail.after.replaced)).toEqual([false, true]);
    expect(JSON.stringify(actions)).not.toContain("whsec_");
  });

  it("over HTTP: admin-only routes; GET shows replayDestination and signingSecretSetAt, never the secret; bad URLs are 422", async () => {
    const source = await makeSource();
    const { key: opKey } = await makeApiKey(["operator"]);
    const req = (method: string, body?: unknown, key = opKey) =>
      new Request(`http://localhost/api/v1/sources/${source}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
    const ctx = { params: Promise.resolve({ name: source }) };
    // API keys never hold admin: 403 on both admin routes.
    expect((await rotateRoute(req("POST", {}), ctx)).status).toBe(403);
    expect((await patchSource(req("PATCH", { replayDestination: "https://x.test" }), ctx)).status).toBe(403);
    await rotateSigningSecret(source, ACTOR);
    const got = await (await getSourceRoute(req("GET"), ctx)).json();
    expect(got.signingSecretSetAt).toEqual(expect.any(String));
    expect(got.replayDestination).toBeNull();
    expect(JSON.stringify(got)).not.toMatch(/signingSecretEnc|whsec_/);

    for (const bad of ["ftp://x.test/a", "not a url", "https://user:pw@x.test/"]) {
      expect(() => parseInput(updateSourceRequest, { replayDestination: bad })).toThrow(expect.objectContaining({ status: 422 }));
    }
    await updateSource(source, { replayDestination: "http://127.0.0.1:8080/in" }, ACTOR);
    await updateSource(source, { replayDestination: null }, ACTOR);
    await expect(replayTarget(source)).rejects.toMatchObject({ status: 409, code: "replay_destination_missing" });
    await expect(rotateSigningSecret("no-such-source-ss", ACTOR)).rejects.toMatchObject({ status: 404 });
  });
});

describe("dead-letter retention", () => {
  it("prunes delivered letters settled before the source's retention (or the default), never pending ones", async () => {
    const withRetention = await makeSource();
    await sql("UPDATE sources SET dead_letter_retention_seconds = 3600 WHERE name = $1", [withRetention]);
    const withDefault = await makeSource();
    const [oldDelivered, recentDelivered, oldPending] = await seedDeadLetters(withRetention, ["a", "b", "c"]);
    const [defaultOld, defaultRecent] = await seedDeadLetters(withDefault, ["a", "b"]);
    const settle = (id: string, ago: string) =>
      sql(`UPDATE dead_letters SET status = 'delivered', settled_at = now() - $2::interval WHERE id = $1`, [id, ago]);
    await settle(oldDelivered, "2 hours");
    await settle(recentDelivered, "10 minutes");
    await settle(defaultOld, "31 days");
    await settle(defaultRecent, "29 days");
    await sql("UPDATE dead_letters SET failed_at = now() - interval '90 days' WHERE id = $1", [oldPending]);

    const r = await pruneSettledDeadLetters({ batchSize: 1 });
    expect(r.deleted).toBeGreaterThanOrEqual(2);
    const left = await sql<{ id: string }>("SELECT id FROM dead_letters WHERE source = ANY($1::text[])", [[withRetention, withDefault]]);
    expect(left.map((l) => l.id).sort()).toEqual([recentDelivered, oldPending, defaultRecent].sort());
  });
});
