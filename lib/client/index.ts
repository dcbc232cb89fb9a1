/**
 * `keyward/client`: the HTTP client, and the wrappers that run a handler once per event (no server code;
 * plain fetch). The Express middleware and the Fastify plugin are `keyward/client/express` and
 * `keyward/client/fastify`; node:http adapters are `keyward/client/node`.
 */
export {
  createKeywardClient,
  KeywardApiError,
  isKeywardApiError,
  type KeywardClient,
  type KeywardClientOptions,
  type CallOptions,
  type ClaimInput,
  type ClaimBatchInput,
  type ClaimOutcome,
  type ClaimResult,
  type ClaimStatus,
  type KeyState,
  type SettleResult,
  type ExtendResult,
  type SavedResult,
  type ResultToSave,
  type ReleaseResult,
  type DeadLetterInput,
  type BatchItemResult,
} from "./client";
export { IdempotencyError, isIdempotencyError, type IdempotencyErrorCode, type IdempotencyInfo, type IdempotencyPhase, type RunOptions } from "./run";
export {
  withIdempotency,
  savedResponse,
  type DuplicateInfo,
  type IdempotentHandler,
  type WithIdempotencyOptions,
} from "./with-idempotency";
export { makeIdempotent, type MakeIdempotentOptions } from "./make-idempotent";
export { canonicalJson, payloadHashOf } from "./payload-hash";
