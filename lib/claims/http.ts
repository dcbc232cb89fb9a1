/**
 * The claim API's handlers, each wrapped by route() (lib/http/route.ts): who may call it, the body or
 * path parsed by the claim schemas, errors in the one shape. Served twice, identically: by Next through
 * the route files under app/api/v1/claims/ (which re-export these), and by `keyward start`'s fast path
 * before Next's router (lib/server/fast-routes.ts), which is why they live in lib and not in app.
 *
 * POST /api/v1/claims — claim one event (scope claims:write): 201 claimed · 200 duplicate · 409 in_flight /
 *   payload_mismatch (see claim.ts).
 * POST /api/v1/claims/batch — claim 1 to 1000 events of one source in one statement (claims:write):
 *   200 { results } in input order.
 * POST /api/v1/claims/complete — mark an in-flight claim done, optionally saving its result (claims:write):
 *   200 · 404 unknown or expired key · 409 wrong claimToken · 422 a result the source does not keep or too large.
 * POST /api/v1/claims/extend — extend a running lease, a client's heartbeat (claims:write): 200 · 404 unknown
 *   or expired key · 409 wrong claimToken (taken over) or claim_not_in_flight (already complete).
 * POST /api/v1/claims/release — delete a claim so the sender's retry is processed: the handler failed
 *   (services, claims:write), or an operator frees a stuck key (operators, scope operator; without
 *   claimToken). 200 · 404 · 409. In the audit history with its actor; a person's release (or an
 *   operator key's) also in the operator action log.
 * GET /api/v1/claims/{source}/{eventId} — the key's state now: alive (time left), expired, or unknown
 *   (claims:read; claims:write implies it).
 */
import { actorOf } from "@/lib/auth/principal";
import { recordAction } from "@/lib/audit/actions";
import { clientAddress, json, route } from "@/lib/http/route";
import { claimEvent, claimEvents } from "./claim";
import {
  batchClaimRequest,
  batchClaimResultSchema,
  claimKeyParams,
  claimRequest,
  claimResultSchema,
  completeRequest,
  extendRequest,
  extendResultSchema,
  keyStateSchema,
  OUTCOME_STATUS,
  releaseRequest,
  settleResultSchema,
} from "./schema";
import { completeClaim, extendClaim, releaseClaim } from "./settle";
import { getKeyState } from "./state";

export const claimHandler = route(
  async ({ body, principal }) => {
    const result = await claimEvent(body, { actor: actorOf(principal) });
    return json(result, OUTCOME_STATUS[result.outcome]);
  },
  {
    allow: ["claims:write"],
    body: claimRequest,
    summary: "Claim one event",
    responses: {
      201: { description: "claimed: process the event, then complete (or release) the claim with its claimToken", schema: claimResultSchema },
      200: { description: "duplicate: the event was processed already; do not process it again", schema: claimResultSchema },
      409: {
        description: "in_flight (another claim holds the lease) or payload_mismatch: a claim outcome with this answer's body, not the error body",
        schema: claimResultSchema,
      },
    },
  },
);

export const claimBatchHandler = route(
  async ({ body, principal }) => json({ results: await claimEvents(body, { actor: actorOf(principal) }) }),
  {
    allow: ["claims:write"],
    body: batchClaimRequest,
    summary: "Claim 1 to 1000 events of one source in one statement",
    responses: { 200: { description: "{ results }: each event's claim outcome, in input order", schema: batchClaimResultSchema } },
  },
);

export const completeHandler = route(async ({ body, principal }) => json(await completeClaim(body, { actor: actorOf(principal) })), {
  allow: ["claims:write"],
  body: completeRequest,
  summary: "Mark an in-flight claim done, optionally saving the result its duplicates are answered with",
  errors: [404, 409],
  responses: { 200: { description: "done (resultSaved: whether the key holds a saved result)", schema: settleResultSchema } },
});

export const extendHandler = route(async ({ body }) => json(await extendClaim(body)), {
  allow: ["claims:write"],
  body: extendRequest,
  summary: "Extend a running lease (a client's heartbeat while its handler runs)",
  errors: [404, 409],
  responses: { 200: { description: "the lease's new end, by the database clock", schema: extendResultSchema } },
});

export const releaseHandler = route(
  async ({ req, body, principal }) => {
    const result = await releaseClaim(body, { actor: actorOf(principal) });
    if (principal.kind !== "apikey" || !principal.capabilities.includes("claims:write")) {
      await recordAction(principal, {
        action: "key.release",
        target: { type: "key", id: `${result.source}/${result.eventId}` },
        source: result.source,
        eventId: result.eventId,
        address: clientAddress(req),
      });
    }
    return json(result);
  },
  {
    allow: ["claims:write", "operator"],
    body: releaseRequest,
    summary: "Release a claim so the sender's retry is processed (or free a stuck key)",
    errors: [404, 409],
    responses: { 200: { description: "released", schema: settleResultSchema } },
  },
);

export const keyStateHandler = route(async ({ params }) => json(await getKeyState(params)), {
  allow: ["claims:read"],
  params: claimKeyParams,
  summary: "The key's state now: alive (time left), expired, or unknown",
  responses: { 200: { description: "The key's state", schema: keyStateSchema } },
});
