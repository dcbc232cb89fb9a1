/**
 * The preflight's readiness checks: everything Start checks, asked before the operator types the count,
 * each failing one saying who can fix it and how. `readinessChecks` decides (pure, unit-tested);
 * `checkReadiness` gathers the facts (the source's destination and signing secret through the same
 * replayTarget() Start calls, a reachability probe of the destination, the caller's capabilities).
 *
 *   permission      the caller may start replays (operator); otherwise an admin grants the role
 *   destination     the source has a replay destination; an admin sets it (Start: 409 replay_destination_missing)
 *   signing_secret  the source has a readable signing secret; an admin generates it (Start: 409 signing_secret_missing
 *                   / signing_secret_unreadable). An operator cannot: the fix names the admin action and links it.
 *   reachable       DNS, TCP connect and TLS to the destination (reachability.ts). A failure warns but does not
 *                   block: Start accepts it and deliveries retry on the replay's schedule; the destination's
 *                   owner fixes it (or an admin, when the URL itself is wrong).
 * `ready` is true when no blocking check fails: exactly when Start would not refuse for these reasons.
 */
import "server-only";
import { z } from "zod";
import { hasCapability } from "@/lib/auth/roles";
import type { Principal } from "@/lib/auth/principal";
import { KeywardError } from "@/lib/errors";
import { query } from "@/lib/db/sql";
import { database, type Db } from "@/lib/db/transaction";
import { replayTarget } from "@/lib/sources/signing-secret";
import { probeDestination, type Probe } from "./reachability";
import type { ReadinessCheck } from "./schema";

export type ReadinessFacts = {
  source: string;
  /** The caller may start replays (operator), and may change sources (admin). */
  canStart: boolean;
  isAdmin: boolean;
  /** The destination as shown (a broker password masked), or null when none is set. */
  destination: string | null;
  secret: "ok" | "missing" | "unreadable";
  /** The probe of the destination; null when there is none to probe. */
  probe: Probe | null;
};

/** Where an admin sets a source's destination and signing secret in the console. */
export const sourceSettingsHref = (source: string) => `/sources#replay-target-${encodeURIComponent(source)}`;

/** The checks, in the order they are shown. Pure. */
export function readinessChecks(f: ReadinessFacts): ReadinessCheck[] {
  const admin = f.isAdmin ? "you (admin)" : "an admin";
  const href = sourceSettingsHref(f.source);
  const checks: ReadinessCheck[] = [];
  checks.push(
    f.canStart
      ? { check: "permission", label: "Permission", state: "pass", blocksStart: true, detail: "You may start replays (operator role or scope).", fix: null }
      : {
          check: "permission",
          label: "Permission",
          state: "fail",
          blocksStart: true,
          detail: "Starting a replay needs the operator role (or an API key with the operator scope).",
          fix: { who: "an admin", action: "Give this user the operator role on the Users screen (or create an API key with the operator scope).", href: "/users" },
        },
  );
  checks.push(
    f.destination
      ? { check: "destination", label: "Replay destination", state: "pass", blocksStart: true, detail: `Replays go to ${f.destination}.`, fix: null }
      : {
          check: "destination",
          label: "Replay destination",
          state: "fail",
          blocksStart: true,
          detail: `Source ${f.source} has no replay destination: Start would refuse (409 replay_destination_missing).`,
          fix: {
            who: admin,
            action: `Set the replay destination on the Sources screen (${f.source} → Replay → Set destination), or PATCH /api/v1/sources/${f.source} with replayDestination.`,
            href,
          },
        },
  );
  checks.push(
    f.secret === "ok"
      ? { check: "signing_secret", label: "Signing secret", state: "pass", blocksStart: true, detail: "Each replay is signed (webhook-signature).", fix: null }
      : {
          check: "signing_secret",
          label: "Signing secret",
          state: "fail",
          blocksStart: true,
          detail:
            f.secret === "missing"
              ? `Source ${f.source} has no signing secret: Start would refuse (409 signing_secret_missing).`
              : `The signing secret of ${f.source} cannot be decrypted (the auth secret changed?): Start would refuse (409 signing_secret_unreadable).`,
          fix: {
            who: admin,
            action: `Generate a signing secret on the Sources screen (${f.source} → Replay → Generate signing secret), or POST /api/v1/sources/${f.source}/signing-secret; then give it to the destination's owner so it can verify the signatures.${f.isAdmin ? "" : " Operators cannot set secrets."}`,
            href,
          },
        },
  );
  if (f.destination) checks.push(reachableCheck(f, admin, href));
  return checks;
}

function reachableCheck(f: ReadinessFacts, admin: string, href: string): ReadinessCheck {
  const base = { check: "reachable" as const, label: "Destination reachable", blocksStart: false };
  const p = f.probe;
  if (!p) return { ...base, state: "warn", detail: "Not checked.", fix: null };
  const steps = p.steps.map((s) => `${s.step.toUpperCase()} ${s.ok ? "ok" : "failed"}: ${s.detail}`).join("; ");
  if (p.ok) return { ...base, state: "pass", detail: steps, fix: null };
  const failed = p.steps.find((s) => !s.ok)!;
  const action =
    failed.step === "dns"
      ? `The host name ${p.host || "(none)"} does not resolve: the destination's owner fixes its DNS record, or ${admin} corrects the URL on the Sources screen.`
      : failed.step === "connect"
        ? `Nothing accepts connections at ${p.host}:${p.port}: the destination's owner starts the service or opens the firewall to this server.`
        : `The TLS handshake with ${p.host}:${p.port} failed (certificate not accepted, or not TLS): the destination's owner installs a certificate a standard client trusts.`;
  return {
    ...base,
    state: "warn",
    detail: `${steps}. A replay can start: each delivery is retried on the replay's schedule while it stays down.`,
    fix: { who: failed.step === "dns" ? `the destination's owner or ${admin}` : "the destination's owner", action, href: failed.step === "dns" ? href : null },
  };
}

/** The checks for `source` as `actor` sees them (one probe of the destination, a few seconds at most). */
export async function checkReadiness(source: string, actor: Principal, db: Db = database()): Promise<ReadinessCheck[]> {
  const facts: ReadinessFacts = {
    source,
    canStart: hasCapability(actor.capabilities, "operator"),
    isAdmin: hasCapability(actor.capabilities, "admin"),
    destination: null,
    secret: "ok",
    probe: null,
  };
  try {
    const target = await replayTarget(source, db);
    facts.destination = target.url;
    facts.probe = await probeDestination(target.brokerUrl ?? target.url);
  } catch (err) {
    if (!(err instanceof KeywardError) || err.status !== 409) throw err;
    // replayTarget checks the destination first, then the secret: read what it could not tell us.
    const [s] = await query(
      z.object({ replay_destination: z.string().nullable(), has_secret: z.boolean() }),
      "SELECT replay_destination, signing_secret_enc IS NOT NULL AS has_secret FROM sources WHERE name = $1",
      [source],
      db,
    );
    facts.destination = s?.replay_destination ?? null;
    facts.secret = err.code === "signing_secret_unreadable" ? "unreadable" : s?.has_secret ? "ok" : "missing";
    if (facts.destination) facts.probe = await probeDestination(facts.destination);
  }
  return readinessChecks(facts);
}

/** Whether Start would accept these checks (no blocking check fails). Pure. */
export const isReady = (checks: readonly ReadinessCheck[]) => checks.every((c) => !c.blocksStart || c.state === "pass");
