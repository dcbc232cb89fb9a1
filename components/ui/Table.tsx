import type { ReactNode } from "react";
import { clsx } from "clsx";
import tableStyles from "./Table.module.css";

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
      /** A heading over consecutive columns of the same group ("Keys now", "Last hour"): a second header row. */
      group?: string;
    };

type ColumnSpec = Exclude<Column, string>;

/** The group row over the columns: one cell per run of consecutive columns in the same group, or a column of none. */
function groupRow(cols: ColumnSpec[]): { group?: string; first: ColumnSpec; span: number }[] {
  const runs: { group?: string; first: ColumnSpec; span: number }[] = [];
  for (const c of cols) {
    const last = runs[runs.length - 1];
    if (last && c.group !== undefined && last.group === c.group) last.span++;
    else runs.push({ group: c.group, first: c, span: 1 });
  }
  return runs;
}

/**
 * The console's table: a card that scrolls sideways when the table is wider than the page, a caption (for
 * screen readers unless `captionClassName` shows it), the header from `columns` (two rows when columns
 * name a `group`), the rows as children and an optional footer. `wrap` lets long cells wrap. Display only:
 * loading, error and empty states are QueryView's (components/ui/QueryView.tsx).
 */
export function Table({
  caption,
  captionClassName = "visually-hidden",
  columns,
  wrap = false,
  foot,
  children,
  ...rest
}: {
  caption: ReactNode;
  captionClassName?: string;
  columns: readonly (Column | false)[];
  wrap?: boolean;
  /** Rows of a <tfoot> (totals). */
  foot?: ReactNode;
  children: ReactNode;
  "data-testid"?: string;
}) {
  const cols = columns.filter((c): c is Column => c !== false).map((c) => (typeof c === "string" ? { label: c } : c));
  const grouped = cols.some((c) => c.group !== undefined);
  const th = (col: ColumnSpec, rowSpan?: number) => (
    <th key={`${col.group ?? ""}/${col.label}`} scope="col" rowSpan={rowSpan} className={col.num ? tableStyles.num : undefined} title={col.title}>
      {col.hideLabel ? <span className="visually-hidden">{col.label}</span> : col.label}
    </th>
  );
  return (
    <div className={tableStyles.frame} {...rest}>
      <table className={clsx(tableStyles.table, wrap && tableStyles.wrap)}>
        <caption className={captionClassName}>{caption}</caption>
        <thead>
          {grouped ? (
            <>
              <tr>
                {groupRow(cols).map((run) =>
                  run.group === undefined ? (
                    th(run.first, 2)
                  ) : (
                    <th key={run.group} colSpan={run.span} scope="colgroup" className={tableStyles.group}>
                      {run.group}
                    </th>
                  ),
                )}
              </tr>
              <tr>{cols.filter((c) => c.group !== undefined).map((c) => th(c))}</tr>
            </>
          ) : (
            <tr>{cols.map((c) => th(c))}</tr>
          )}
        </thead>
        <tbody>{children}</tbody>
        {foot && <tfoot>{foot}</tfoot>}
      </table>
    </div>
  );
}
