/**
 * Durations as operators write them: "90s", "5m", "36h", "3d", or combined "1d12h". Pure; unit-tested.
 */
const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86400 } as const;

export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (!/^(\d+[smhd])+$/.test(trimmed)) {
    throw new Error(`"${text}" is not a duration: use a number with a unit s, m, h or d (e.g. 90s, 5m, 36h, 3d, 1d12h)`);
  }
  let total = 0;
  for (const [, n, unit] of trimmed.matchAll(/(\d+)([smhd])/g)) {
    total += Number(n) * UNIT_SECONDS[unit as keyof typeof UNIT_SECONDS];
  }
  if (!Number.isSafeInteger(total)) throw new Error(`"${text}" is too long a duration`);
  return total;
}

/**
 * The one way Keyward writes a duration (CLI, server messages and every console screen): the shortest
 * exact rendering, which parseDuration reads back. 605100 → "7d5m"; 0 → "0s". Fractions of a second are
 * dropped and a negative span reads "0s".
 */
export function formatDuration(seconds: number): string {
  let rest = Math.floor(seconds);
  if (!(rest > 0)) return "0s";
  let out = "";
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return out;
}
