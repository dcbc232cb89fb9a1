/**
 * GET /metrics — the Prometheus exposition (lib/metrics/prometheus.ts). Callers: API keys with scope
 * metrics (or read/operator, and signed-in people), or `Authorization: Bearer $KEYWARD_METRICS_TOKEN`.
 * Outside /api because that is where scrapers look; served by the server's fast path
 * (lib/server/fast-routes.ts) like the claim routes, through the same route() wrapper.
 */
import { loadEnv } from "@/lib/config/env";
import { route } from "@/lib/http/route";
import { renderMetrics } from "@/lib/metrics/prometheus";

export const dynamic = "force-dynamic";

export const GET = route(
  async () => {
    const { text, contentType } = await renderMetrics();
    return new Response(text, { headers: { "content-type": contentType, "cache-control": "no-store" } });
  },
  { allow: ["metrics"], token: { name: "KEYWARD_METRICS_TOKEN", get: () => loadEnv().KEYWARD_METRICS_TOKEN } },
);
