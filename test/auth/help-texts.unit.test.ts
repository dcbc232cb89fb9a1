/** The role and scope help texts: one table (lib/auth/roles.ts), shown by the console and repeated in docs/auth.md. Pure. */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROLE_HELP, ROLES, SCOPE_HELP } from "@/lib/auth/roles";
import { SCOPES } from "@/lib/auth/schema";

const docs = readFileSync(path.join(import.meta.dirname, "../../docs/auth.md"), "utf8");
const rows = (names: readonly string[]) => names.map((n) => docs.split("\n").find((line) => line.startsWith(`| \`${n}\` |`)));

describe("role and scope help", () => {
  it("has a sentence for every role and every scope", () => {
    expect(Object.keys(ROLE_HELP).sort()).toEqual([...ROLES].sort());
    expect(Object.keys(SCOPE_HELP).sort()).toEqual([...SCOPES].sort());
  });

  it("docs/auth.md says the same, word for word", () => {
    expect(rows(ROLES)).toEqual(ROLES.map((r) => `| \`${r}\` | ${ROLE_HELP[r]} |`));
    // `read` and `operator` are both a role-ish word and a scope: the scope table comes second.
    const scopeTable = docs.slice(docs.indexOf("| API-key scope |"));
    const scopeRows = SCOPES.map((s) => scopeTable.split("\n").find((line) => line.startsWith(`| \`${s}\` |`)));
    expect(scopeRows).toEqual(SCOPES.map((s) => `| \`${s}\` | ${SCOPE_HELP[s]} |`));
  });

  it("says deadletters:write submits dead letters (replaying them is an operator's)", () => {
    expect(SCOPE_HELP["deadletters:write"]).toMatch(/^submit dead letters/);
  });
});
