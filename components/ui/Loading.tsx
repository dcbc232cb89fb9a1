import type { ReactNode } from "react";
import { LoaderCircle } from "lucide-react";
import { Icon } from "./Icon";
import styles from "./Loading.module.css";

/**
 * The one loading state: a turning circle and a sentence saying what is being fetched ("Loading dead
 * letters…"). Marked busy, so tests and assistive technology know the page is not settled yet. QueryView
 * shows it while a query's first answer is awaited; EmptyState and ErrorBox are its siblings.
 */
export function Loading({ children }: { children: ReactNode }) {
  return (
    <p className={styles.loading} role="status" aria-busy="true">
      <Icon icon={LoaderCircle} spin />
      {children}
    </p>
  );
}
