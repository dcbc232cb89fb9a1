"use client";

import styles from "./(console)/layout.module.css";
import panelStyles from "@/components/ui/Panel.module.css";
import textStyles from "@/components/ui/text.module.css";

/**
 * The console's last-resort error page. Pages look up the session in the database on every request, so
 * the usual cause is a database that cannot be reached; say so rather than show a blank 500.
 */
export default function ConsoleError({ reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <main className={styles.content}>
      <section className={panelStyles.panel} role="alert">
        <h1 className={textStyles.sectionTitle}>Keyward cannot show this page right now</h1>
        <p>
          The server could not complete the request, most often because the database is unreachable or too slow. The
          server log has the details. Claims already recorded are safe; nothing was changed by this page.
        </p>
        <button type="button" className="button" onClick={() => reset()}>
          Try again
        </button>
      </section>
    </main>
  );
}
