/**
 * Global set-up of the tiers that serve the console (system, e2e): makes the production build current
 * once, before any of their files runs (two files building at once would fight over .next; lib/server/build.ts
 * also holds a lock). KEYWARD_TEST_NO_BUILD=1 skips it for a run that serves nothing through Next.
 */
import { buildIfNeeded } from "@/lib/server/build";

export default function setup() {
  if (!process.env.KEYWARD_TEST_NO_BUILD) buildIfNeeded();
}
