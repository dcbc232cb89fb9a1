/**
 * One colour per quantity, the same on every chart (the Overview, a source's page, the advisor): the
 * --chart-* tokens of app/globals.css, so a chart follows the theme (lighter series on the dark surface).
 * SVG attributes and inline styles take var() as any CSS value does.
 */
export const CHART_COLORS = {
  bytes: "var(--chart-bytes)",
  indexBytes: "var(--chart-index-bytes)",
  rows: "var(--chart-rows)",
  alive: "var(--chart-alive)",
  backlog: "var(--chart-backlog)",
  rowsDeleted: "var(--chart-rows-deleted)",
  rate: "var(--chart-rate)",
  claims: "var(--chart-bytes)",
  duplicates: "var(--chart-duplicates)",
  late: "var(--chart-late)",
  replay: "var(--chart-replay)",
} as const;
