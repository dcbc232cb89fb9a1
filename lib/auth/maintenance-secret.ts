/**
 * The shared secret of external schedulers (cron, a Kubernetes CronJob, a cloud scheduler) that call
 * POST /api/v1/maintenance/prune/external instead of, or besides, the server's own schedule. They send it
 * as `X-Keyward-Maintenance-Secret`; it is compared in constant time (both sides hashed to the same
 * length first, so neither the content nor the length leaks through timing).
 */
import "server-only";
import { createHash, timingSafeEqual } from "node:crypto";
import { loadEnv } from "@/lib/config/env";
import { KeywardError } from "@/lib/errors";

export const MAINTENANCE_SECRET_HEADER = "x-keyward-maintenance-secret";

/** Throws 404 when KEYWARD_MAINTENANCE_SECRET is not set (the route is off), 401 when the header is missing or wrong. */
export function assertMaintenanceSecret(headers: Headers): void {
  const secret = loadEnv().KEYWARD_MAINTENANCE_SECRET;
  if (!secret) {
    throw KeywardError.notFound("not_found", "external maintenance is off: set KEYWARD_MAINTENANCE_SECRET to turn it on");
  }
  const given = headers.get(MAINTENANCE_SECRET_HEADER);
  if (given === null || !timingSafeEqual(sha256(given), sha256(secret))) {
    throw KeywardError.unauthorized(`send the maintenance secret as ${MAINTENANCE_SECRET_HEADER}`);
  }
}

const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest();
