import type { ReactNode } from "react";

export type StatTone = "normal" | "warn";

/** One headline figure with a label and a line of context. Display only. */
export function StatCard({
  label,
  value,
  hint,
  tone = "normal",
  title,
}: {
  label: string;
  value: ReactNode;
  hint?: ReactNode;
  tone?: StatTone;
  /** Longer explanation, shown on hover. */
  title?: string;
}) {
  return (
    <div className={`stat-card stat-card--${tone}`} title={title}>
      <div className="stat-card__label">{label}</div>
      <div className="stat-card__value">{value}</div>
      {hint !== undefined && <div className="stat-card__hint">{hint}</div>}
    </div>
  );
}

/** Placeholder with the same footprint while the first figures load. */
export function StatCardSkeleton({ label }: { label: string }) {
  return (
    <div className="stat-card" aria-hidden="true">
      <div className="stat-card__label">{label}</div>
      <div className="stat-card__value skeleton">&nbsp;</div>
      <div className="stat-card__hint skeleton">&nbsp;</div>
    </div>
  );
}
