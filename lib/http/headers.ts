/**
 * Security headers. API answers carry API_HEADERS, whichever server path produced them (Next's router or
 * the claim fast path in lib/server/fast-routes.ts; next.config.ts applies the same list). Console pages
 * carry pageHeaders(nonce), set per request by lib/server/start.ts: a Content-Security-Policy whose
 * scripts must bear that request's nonce (Next puts it on its own scripts when it finds it in the
 * request's CSP header), so an injected script does not run.
 */
export const API_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["x-content-type-options", "nosniff"],
  ["referrer-policy", "no-referrer"],
  ["cache-control", "no-store"],
  ["content-security-policy", "default-src 'none'; frame-ancestors 'none'"],
  ["x-frame-options", "DENY"],
];

export function pageCsp(nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'`,
    // React renders style attributes (charts, widths); inline styles cannot carry a nonce.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

export function pageHeaders(nonce: string): ReadonlyArray<readonly [string, string]> {
  return [
    ["content-security-policy", pageCsp(nonce)],
    ["x-content-type-options", "nosniff"],
    ["referrer-policy", "same-origin"],
    ["x-frame-options", "DENY"],
  ];
}
