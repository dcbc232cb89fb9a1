import path from "node:path";
import styles from "@/components/sources/advisor.module.css";

/**
 * Says the console shows demo data (`keyward demo`: KEYWARD_DEMO=1, ./.keyward-demo/). A server
 * component: read per request from the server's environment, nothing on a real install.
 */
export function DemoBanner() {
  if (process.env.KEYWARD_DEMO !== "1") return null;
  // Its own data directory, as the demo was started with (KEYWARD_DEMO_DIR moves it), relative when inside
  // the working directory; CLI commands reach the demo's data with KEYWARD_DATA_DIR set to it.
  const dir = demoDirShown();
  return (
    <div className={styles.banner} role="note" data-testid="demo-banner">
      <strong>Demo data.</strong> Three simulated senders over the last few days, kept in <code>{dir}</code> apart from any
      real database. Sign in as <code>demo</code> / <code>keyward-demo</code>. CLI commands act on it with{" "}
      <code>KEYWARD_DATA_DIR={dir}</code> before them. Start over with <code>keyward demo --reset</code>.
    </div>
  );
}

function demoDirShown(): string {
  const dir = process.env.KEYWARD_DATA_DIR || "./.keyward-demo/";
  const rel = path.relative(process.cwd(), dir);
  return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? `./${rel}/` : dir;
}
