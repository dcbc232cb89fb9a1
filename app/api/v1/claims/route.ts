/** POST /api/v1/claims — claim one event. The handler: lib/claims/http.ts (shared with the server's fast path). */
export { claimHandler as POST } from "@/lib/claims/http";
