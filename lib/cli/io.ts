/**
 * What the CLI's commands share: running against the prepared database, option parsers that refuse bad
 * values with commander's message, the table printer, and the hidden password prompt.
 */
import { InvalidArgumentError } from "commander";
import { withPreparedDatabase } from "@/lib/db/prepare";
import { parseDuration } from "@/lib/sources/duration";

/** Runs `work` against the database (pending migrations applied first, lib/db/prepare.ts), then releases it. */
export function withDatabase(work: () => Promise<void>): Promise<void> {
  return withPreparedDatabase(work);
}

/** A duration option ("3d", "5m") in seconds. */
export function duration(value: string): number {
  try {
    return parseDuration(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

export function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`"${value}" is not a whole number`);
  return Number(value);
}

/** "500ms", or a duration in s/m/h/d ("30s", "2m"), as milliseconds. */
export function milliseconds(value: string): number {
  const ms = /^(\d+)ms$/.exec(value.trim());
  return ms ? Number(ms[1]) : duration(value) * 1000;
}

export function printTable(rows: Record<string, string>[]): void {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]);
  const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(width[i])).join("  ").trimEnd();
  console.log(line(cols));
  for (const r of rows) console.log(line(cols.map((c) => r[c])));
}

export const iso = (d: Date | null) => (d ? d.toISOString() : "-");

/** Asks twice without echo; an empty answer means "generate one". */
export async function promptNewPassword(): Promise<string | undefined> {
  const first = await promptHidden("Password (at least 12 characters; empty to generate one): ");
  if (first === "") return undefined;
  const second = await promptHidden("Repeat the password: ");
  if (first !== second) throw new Error("the passwords differ");
  return first;
}

function promptHidden(question: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding("utf8");
    let answer = "";
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") {
          done();
          return resolve(answer);
        }
        if (ch === "\u0003") {
          done();
          return reject(new Error("cancelled"));
        }
        if (ch === "\u007f" || ch === "\b") answer = answer.slice(0, -1);
        else answer += ch;
      }
    };
    const done = () => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
    };
    stdin.on("data", onData);
  });
}
