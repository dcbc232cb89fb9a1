/** GET /metrics — the Prometheus exposition. The handler: lib/metrics/http.ts (shared with the server's fast path). */
export { metricsHandler as GET } from "@/lib/metrics/http";

export const dynamic = "force-dynamic";
