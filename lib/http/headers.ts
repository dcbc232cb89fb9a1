/**
 * Response headers every API answer carries, whichever server path produced it (Next's router or the
 * claim fast path in lib/server/fast-routes.ts); next.config.ts applies the same list.
 */
export const API_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["x-content-type-options", "nosniff"],
  ["referrer-policy", "no-referrer"],
  ["cache-control", "no-store"],
];
