/**
 * POST /api/v1/dead-letters/raw — store a failed delivery as it was sent (its body, byte for byte, with its
 * Content-Type). The handler: lib/deadletters/http.ts (shared with the server's fast path).
 */
export { rawIntakeHandler as POST } from "@/lib/deadletters/http";
