/**
 * The one switch for run-time shape checks: route() holding each answer to its declared `responses`
 * (lib/http/route.ts) and query() holding each row to its declared row schema (lib/db/sql.ts). On in
 * development and in tests (NODE_ENV other than production), or with KEYWARD_CHECK_RESPONSES=1 (the e2e
 * tests' servers set it). Off in production: there only the types hold, and no answer or row is read twice.
 */
export function checkShapes(): boolean {
  return process.env.NODE_ENV !== "production" || process.env.KEYWARD_CHECK_RESPONSES === "1";
}
