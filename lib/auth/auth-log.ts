/**
 * Better Auth's logger. Its own prints every failed database call with a stack trace, so during an outage
 * each sign-in and session check added eight lines to the log, all saying the database is down. Errors
 * that are the database being unavailable (lib/db/sql.ts isUnavailable: the request is already answered
 * 503) become one line, at most once per UNAVAILABLE_EVERY_MS with how many were folded into it; anything
 * else is printed as Better Auth would.
 */
import { isUnavailable } from "@/lib/db/sql";
import { processGlobal } from "@/lib/process-global";

type Level = "debug" | "info" | "warn" | "error";

const UNAVAILABLE_EVERY_MS = 10_000;
// Process-wide: Next's route bundles each have their own copy of this module.
const state = processGlobal("authLog", () => ({ lastUnavailableAt: -Infinity, folded: 0 }));

export function logAuth(level: Level, message: string, ...args: unknown[]): void {
  const fault = args.find((a) => isUnavailable(a));
  if (fault !== undefined) {
    const now = performance.now();
    if (now - state.lastUnavailableAt < UNAVAILABLE_EVERY_MS) {
      state.folded++;
      return;
    }
    state.lastUnavailableAt = now;
    const more = state.folded > 0 ? ` (${state.folded} more since the last such line)` : "";
    state.folded = 0;
    console.error(`[keyward] sign-in or session check failed: the database is unavailable (${describe(fault)}); answered 503${more}`);
    return;
  }
  const print = level === "error" ? console.error : level === "warn" ? console.warn : console.info;
  print(`[better-auth] ${level}: ${message}`, ...args);
}

function describe(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  const message = typeof e.message === "string" ? e.message : String(err);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}
