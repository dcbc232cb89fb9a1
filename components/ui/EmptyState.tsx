import type { ReactNode } from "react";
import { Inbox, type LucideIcon } from "lucide-react";
import { Icon } from "./Icon";
import styles from "./EmptyState.module.css";

/**
 * The one empty state, shown instead of a table that has nothing to show yet: an icon, a title saying what
 * is missing, and children that say what to do next (how letters arrive, how to create the first source).
 * `icon` defaults to an empty tray; a list narrowed by filters passes SearchX. `data-icon` names it (for tests).
 */
export function EmptyState({ title, icon = Inbox, children }: { title: string; icon?: LucideIcon; children: ReactNode }) {
  return (
    <div className={styles.emptyState} data-icon={icon.displayName}>
      <h2 className={styles.title}>
        <Icon icon={icon} size="lg" />
        {title}
      </h2>
      <div className={styles.body}>{children}</div>
    </div>
  );
}
