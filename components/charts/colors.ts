/** One colour per quantity, the same on every chart (the Overview, a source's page, the advisor). */
export const CHART_COLORS = {
  bytes: "#3b6fe0",
  indexBytes: "#7c9cf0",
  rows: "#d97706",
  alive: "#16a34a",
  backlog: "#c2410c",
  rowsDeleted: "#8b5cf6",
  rate: "#0d9488",
  claims: "#3b6fe0",
  duplicates: "#db2777",
  late: "#b91c1c",
  replay: "#f59e0b",
} as const;
