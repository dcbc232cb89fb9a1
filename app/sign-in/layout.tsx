import type { ReactNode } from "react";
import styles from "@/components/auth/auth.module.css";
import { clsx } from "clsx";
import textStyles from "@/components/ui/text.module.css";

/** The page people see before they are signed in: the brand and one card, no navigation. */
export default function SignInLayout({ children }: { children: ReactNode }) {
  return (
    <div className={styles.shell}>
      <main className={styles.card}>
        <p className={clsx(textStyles.brand, styles.brand)}>Keyward</p>
        {children}
      </main>
    </div>
  );
}
