/** `keyward/client`: the HTTP client and the handler wrapper (no server code; plain fetch). */
export {
  createKeywardClient,
  KeywardApiError,
  isKeywardApiError,
  type KeywardClient,
  type KeywardClientOptions,
  type ClaimInput,
  type ClaimBatchInput,
  type ClaimOutcome,
  type ClaimResult,
  type ClaimStatus,
  type KeyState,
  type SettleResult,
  type ReleaseResult,
  type DeadLetterInput,
  type BatchItemResult,
} from "./client";
export { withIdempotency, type IdempotencyInfo, type IdempotentHandler, type WithIdempotencyOptions } from "./with-idempotency";
