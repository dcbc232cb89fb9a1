/** GET /healthz — liveness. The handler: lib/health/http.ts (shared with the server's fast path). */
export { healthzHandler as GET } from "@/lib/health/http";

export const dynamic = "force-dynamic";
