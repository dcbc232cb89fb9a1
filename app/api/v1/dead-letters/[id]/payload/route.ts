/** GET /api/v1/dead-letters/:id/payload — the payload as stored, as an attachment (read). The handler: lib/deadletters/http.ts. */
export { payloadHandler as GET } from "@/lib/deadletters/http";
