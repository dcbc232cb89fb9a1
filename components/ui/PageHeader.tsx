import type { ReactNode } from "react";
import styles from "./PageHeader.module.css";

/** A screen's title, one line saying what it shows, and room for status or actions on the right. */
export function PageHeader({ title, description, aside }: { title: string; description?: ReactNode; aside?: ReactNode }) {
  return (
    <header className={styles.header}>
      <div className={styles.heading}>
        <h1 className={styles.title}>{title}</h1>
        {description && <p className={styles.description}>{description}</p>}
      </div>
      {aside && <div>{aside}</div>}
    </header>
  );
}
