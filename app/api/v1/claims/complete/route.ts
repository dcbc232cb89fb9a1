/** POST /api/v1/claims/complete — mark an in-flight claim done. The handler: lib/claims/http.ts (shared with the server's fast path). */
export { completeHandler as POST } from "@/lib/claims/http";
