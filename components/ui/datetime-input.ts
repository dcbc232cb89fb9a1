/** Between ISO instants and `<input type="datetime-local">` values (local time, minute precision). Pure. */

/** A datetime-local value (local time) as an ISO instant; undefined when empty or not a time. */
export function localInputToIso(value: string): string | undefined {
  if (!value.trim()) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** An ISO instant as a datetime-local value in local time ("" when absent or not a time). */
export function isoToLocalInput(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}
