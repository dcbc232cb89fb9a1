/**
 * Gaps in a chart's series (pure; unit-tested in test/overview/chart-data.unit.test.ts). A null value is a gap and
 * stays one (connectNulls off); a value whose neighbours in its own series are both gaps draws no line (a
 * line needs two points), so it gets a dot instead, or it would not show at all.
 */
const has = (v: unknown) => typeof v === "number" && Number.isFinite(v);

/** Whether `data[i][key]` is a value with a gap (or the range's end) on both sides, in that series alone. */
export function isLonePoint<P>(data: readonly P[], i: number, key: keyof P): boolean {
  if (!has(data[i]?.[key])) return false;
  return !has(data[i - 1]?.[key]) && !has(data[i + 1]?.[key]);
}
