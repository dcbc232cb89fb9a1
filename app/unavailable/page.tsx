import type { Metadata } from "next";
import { DatabaseUnavailable } from "@/components/ui/DatabaseUnavailable";
import styles from "@/components/auth/auth.module.css";
import { clsx } from "clsx";
import textStyles from "@/components/ui/text.module.css";

export const metadata: Metadata = { title: "Database unreachable" };

/**
 * Where a console page sends the browser when it cannot look up the session because the database is
 * unreachable (lib/auth/pages.ts). Touches no database itself; it checks every few seconds and goes
 * back to the console once the database answers again.
 */
export default function Page() {
  return (
    <div className={styles.shell}>
      <main className={styles.card}>
        <p className={clsx(textStyles.brand, styles.brand)}>Keyward</p>
        <DatabaseUnavailable />
      </main>
    </div>
  );
}
