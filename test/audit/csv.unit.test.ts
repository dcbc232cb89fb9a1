/**
 * The CSV export's cell rule (lib/audit/export.ts), as pure functions: formulas are defused at the start
 * of a cell and after any separator or line break inside it, and cells holding `;`, `,`, a tab, quotes or
 * line breaks are quoted, so that a spreadsheet splitting lines on `;` (many locales) or tabs runs
 * nothing. The streamed export over HTTP is tested in search.test.ts.
 */
import { describe, expect, it } from "vitest";
import { csvCell, csvText } from "@/lib/audit/export";

/** What a spreadsheet that splits a line on `sep` and ignores quotes would see as cells. */
const naiveCells = (csv: string, sep: string) => csv.split(/\r?\n|\r/).flatMap((line) => line.split(sep));
/** A cell a spreadsheet would evaluate: it starts (after spaces or a stray quote) with = + - or @. */
const runsAsFormula = (cell: string) => /^[\s"]*[=+\-@]/.test(cell);

describe("csvCell", () => {
  it("defuses a formula after a separator inside the cell", () => {
    expect(csvCell("abc;=1+1")).toBe("abc;'=1+1");
    expect(csvCell("abc; =1+1")).toBe("abc; '=1+1");
    expect(csvCell("a,b,-2+3")).toBe("a,b,'-2+3");
    expect(csvCell("a\t@SUM(A1)")).toBe("a\t'@SUM(A1)");
    expect(csvCell("a|+cmd")).toBe("a|'+cmd");
    expect(csvCell("line\n=HYPERLINK(\"http://evil\")")).toBe("line\n'=HYPERLINK(\"http://evil\")");
    expect(csvCell("line\r\n=1")).toBe("line\r\n'=1");
    expect(csvCell("=a;=b")).toBe("'=a;'=b");
  });

  it("still defuses a formula at the start, and leaves other text alone", () => {
    expect(csvCell("=HYPERLINK(\"x\")")).toBe("'=HYPERLINK(\"x\")");
    for (const c of ["+1", "-1", "@SUM(A1)", "\tx", "\rx"]) expect(csvCell(c)).toBe(`'${c}`);
    for (const c of ["evt_1", "a;b", "a, b", "2026-12-03T00:00:00Z", "x=1", "a-b", "{\"n\":1}"]) expect(csvCell(c)).toBe(c);
    expect(csvCell(null)).toBe("");
  });
});

describe("csvText", () => {
  it("quotes cells holding ; , tab, quotes or line breaks, and no others", () => {
    const cells = ["abc;=1+1", "a,b", "a\tb", 'say "hi"', "two\nlines", "plain", "'@actor"].map(csvCell);
    expect(csvText([cells], false)).toBe(`"abc;'=1+1","a,b","a\tb","say ""hi""","two\nlines",plain,'@actor\n`);
  });

  it("writes the header first when asked", () => {
    expect(csvText([["1", "2", "s", "e", "t", "claimed", "a", ""]], true)).toBe(
      "id,at,source,event_id,event_type,kind,actor,detail\n1,2,s,e,t,claimed,a,\n",
    );
  });

  it("hostile cells run nothing in a reader that splits on ; , or tab and ignores the quotes", () => {
    const hostile = ["abc;=1+1", "x; =cmd|' /C calc'!A0", "a,=2+5", "a\t@SUM(1)", "q\";=1", "n\n-1+1", "=1", "a;b,c\t+d", "ok"];
    const csv = csvText([hostile.map(csvCell)], false);
    for (const sep of [";", ",", "\t"]) {
      const formulas = naiveCells(csv, sep).filter(runsAsFormula);
      expect(formulas, `split on ${JSON.stringify(sep)}`).toEqual([]);
    }
    // Without the rule the same file would run formulas under a ; split.
    const raw = hostile.join(",");
    expect(naiveCells(raw, ";").filter(runsAsFormula).length).toBeGreaterThan(0);
  });
});
