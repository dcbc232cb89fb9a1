import type { Metadata } from "next";
import { DatabaseUnavailable } from "@/components/ui/DatabaseUnavailable";

export const metadata: Metadata = { title: "Database unreachable" };

/**
 * Where a console page sends the browser when it cannot look up the session because the database is
 * unreachable (lib/auth/pages.ts). Touches no database itself; it checks every few seconds and goes
 * back to the console once the database answers again.
 */
export default function Page() {
  return (
    <div className="auth-shell">
      <main className="auth-card">
        <p className="brand auth-card__brand">Keyward</p>
        <DatabaseUnavailable />
      </main>
    </div>
  );
}
