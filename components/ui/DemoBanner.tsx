import styles from "@/components/sources/advisor.module.css";

/**
 * Says the console shows demo data (`keyward demo`: KEYWARD_DEMO=1, ./.keyward-demo/). A server
 * component: read per request from the server's environment, nothing on a real install.
 */
export function DemoBanner() {
  if (process.env.KEYWARD_DEMO !== "1") return null;
  return (
    <div className={styles.banner} role="note" data-testid="demo-banner">
      <strong>Demo data.</strong> Three simulated senders over the last few days, kept in ./.keyward-demo/ apart from any real
      database. Sign in as <code>demo</code> / <code>keyward-demo</code>. Start over with <code>keyward demo --reset</code>.
    </div>
  );
}
