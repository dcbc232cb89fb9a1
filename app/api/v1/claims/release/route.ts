/** POST /api/v1/claims/release — release a claim. The handler: lib/claims/http.ts (shared with the server's fast path). */
export { releaseHandler as POST } from "@/lib/claims/http";
