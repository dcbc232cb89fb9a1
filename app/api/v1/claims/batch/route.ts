/** POST /api/v1/claims/batch — claim up to 1000 events. The handler: lib/claims/http.ts (shared with the server's fast path). */
export { claimBatchHandler as POST } from "@/lib/claims/http";
