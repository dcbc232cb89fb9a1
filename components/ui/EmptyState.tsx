import type { ReactNode } from "react";

/** Shown instead of a table that has nothing to show yet; the children say how to get something there. */
export function EmptyState({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="empty-state">
      <h2 className="empty-state__title">{title}</h2>
      <div className="empty-state__body">{children}</div>
    </div>
  );
}
