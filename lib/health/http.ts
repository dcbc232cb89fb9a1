/**
 * GET /healthz and GET /readyz — the health probes, public (a load balancer or Kubernetes calls them with
 * no credentials), never cached. Served by the server's fast path before Next (lib/server/fast-routes.ts)
 * and by Next through app/healthz/route.ts and app/readyz/route.ts, which re-export these handlers.
 *
 * - /healthz (liveness): `200 {"status":"ok"}` while the process serves HTTP; asks nothing else, so a
 *   database outage never makes an orchestrator restart healthy processes.
 * - /readyz (readiness): `200` with the checks when the instance should get traffic; otherwise `503
 *   not_ready` in the one error body, whose message joins the reasons and whose `details` has the checks
 *   (lib/health/readiness.ts).
 * A request that sends an Authorization header has it checked like on every route (a bad key is a 401):
 * probes send none.
 */
import { route, json } from "@/lib/http/route";
import { KeywardError } from "@/lib/errors";
import { checkReadiness } from "./readiness";
import { livenessSchema, readinessSchema, type Liveness } from "./schema";

const NO_STORE = { "cache-control": "no-store" };

export const healthzHandler = route(
  async () => json({ status: "ok", uptimeSeconds: Math.round(process.uptime()) } satisfies Liveness, 200, NO_STORE),
  {
    public: "a liveness probe: load balancers and orchestrators call it without credentials; it reads nothing",
    summary: "Liveness: the process serves HTTP (no database asked)",
    responses: { 200: { description: "The process is alive", schema: livenessSchema } },
  },
);

export const readyzHandler = route(
  async () => {
    const readiness = await checkReadiness();
    if (readiness.status === "ready") return json(readiness, 200, NO_STORE);
    throw new KeywardError(503, "not_ready", `not ready: ${readiness.reasons.join("; ")}`, readiness);
  },
  {
    public: "a readiness probe: load balancers and orchestrators call it without credentials; it says only whether this instance can serve",
    summary: "Readiness: the database answers in time, migrations are current, no job is wedged (503 not_ready with the reasons otherwise)",
    responses: { 200: { description: "Ready for traffic", schema: readinessSchema } },
  },
);
