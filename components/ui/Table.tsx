import type { ReactNode } from "react";

/** A column heading: its label, or the label with how the column reads. */
export type Column =
  | string
  | {
      label: string;
      /** Right-aligned figures. */
      num?: boolean;
      /** Longer explanation, shown on hover. */
      title?: string;
      /** For screen readers only (a checkbox or button column). */
      hideLabel?: boolean;
    };

/**
 * The console's table: scrollable frame, a caption (for screen readers unless `captionClassName` shows
 * it), one header row from `columns`, and the rows as children. `wrap` lets long cells wrap. Display only.
 */
export function Table({
  caption,
  captionClassName = "visually-hidden",
  columns,
  wrap = false,
  children,
}: {
  caption: ReactNode;
  captionClassName?: string;
  columns: readonly (Column | false)[];
  wrap?: boolean;
  children: ReactNode;
}) {
  return (
    <div className="table-wrap">
      <table className={wrap ? "table table--wrap" : "table"}>
        <caption className={captionClassName}>{caption}</caption>
        <thead>
          <tr>
            {columns
              .filter((c): c is Column => c !== false)
              .map((c) => {
                const col = typeof c === "string" ? { label: c } : c;
                return (
                  <th key={col.label} scope="col" className={col.num ? "num" : undefined} title={col.title}>
                    {col.hideLabel ? <span className="visually-hidden">{col.label}</span> : col.label}
                  </th>
                );
              })}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
