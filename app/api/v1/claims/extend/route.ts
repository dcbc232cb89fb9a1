/** POST /api/v1/claims/extend — extend a running lease (a client's heartbeat). The handler: lib/claims/http.ts (shared with the server's fast path). */
export { extendHandler as POST } from "@/lib/claims/http";
