import { clsx } from "clsx";
import styles from "./RoleBadge.module.css";

const TONE: Record<string, string | undefined> = { operator: styles.operator, admin: styles.admin, none: styles.none };

/** A console role as a small coloured label. Display only. */
export function RoleBadge({ role }: { role: string }) {
  return <span className={clsx(styles.badge, TONE[role])}>{role}</span>;
}
