/** GET /api/v1/claims/{source}/{eventId} — the key's state now. The handler: lib/claims/http.ts (shared with the server's fast path). */
export { keyStateHandler as GET } from "@/lib/claims/http";
