/**
 * What the charts' source picker (SourcePicker.tsx) offers for what has been typed: among thousands of
 * source names, those that contain the text in any case, names that start with it first, each group in the
 * order given; at most `max` of them, and how many more there are.
 */
export const PICKER_NAMES_SHOWN = 50;

export function namesMatching(names: readonly string[], text: string, max = PICKER_NAMES_SHOWN): { shown: string[]; more: number } {
  const t = text.trim().toLowerCase();
  if (!t) return { shown: names.slice(0, max), more: Math.max(0, names.length - max) };
  const starting: string[] = [];
  const containing: string[] = [];
  let count = 0;
  for (const name of names) {
    const at = name.toLowerCase().indexOf(t);
    if (at < 0) continue;
    count++;
    if (at === 0) starting.push(name);
    else containing.push(name);
  }
  const shown = starting.length >= max ? starting.slice(0, max) : [...starting, ...containing.slice(0, max - starting.length)];
  return { shown, more: count - shown.length };
}
