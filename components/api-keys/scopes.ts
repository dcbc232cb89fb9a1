import { SCOPES, type Scope } from "@/lib/auth/schema";

/** What each API-key scope lets a service do, as the create form explains it. */
export const SCOPE_HELP: Record<Scope, string> = {
  "claims:write": "claim, complete and release events: the scope of a service that receives webhooks",
  "claims:read": "read the state of one key",
  "deadletters:write": "replay dead letters",
  read: "read everything the console shows (overview, sources, audit)",
  operator: "read, plus operator actions and the action log",
  metrics: "scrape GET /metrics (Prometheus) and nothing else",
};

export { SCOPES };
