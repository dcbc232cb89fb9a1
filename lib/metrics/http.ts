/**
 * GET /metrics — the Prometheus exposition (prometheus.ts). Callers: API keys with scope metrics (or
 * read/operator, and signed-in people), or `Authorization: Bearer $KEYWARD_METRICS_TOKEN`. Outside /api
 * because that is where scrapers look. Served by Next through app/metrics/route.ts (which re-exports it)
 * and by the server's fast path (lib/server/fast-routes.ts), like the claim handlers.
 */
import { loadEnv } from "@/lib/config/env";
import { route } from "@/lib/http/route";
import { renderMetrics } from "./prometheus";

export const metricsHandler = route(
  async () => {
    const { text, contentType } = await renderMetrics();
    return new Response(text, { headers: { "content-type": contentType, "cache-control": "no-store" } });
  },
  {
    allow: ["metrics"],
    token: { name: "KEYWARD_METRICS_TOKEN", get: () => loadEnv().KEYWARD_METRICS_TOKEN },
    summary: "The Prometheus exposition",
    responses: { 200: { description: "Prometheus text format", contentType: "text/plain" } },
  },
);
