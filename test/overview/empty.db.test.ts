/**
 * The Overview of a database without any source (a first start): the statement's one clock row, whose
 * source columns are null, passes its row declaration and lists no source (the row checks once answered
 * the console's first page with a 500 here).
 */
import { describe, expect, it } from "vitest";
import { getOverview } from "@/lib/overview/overview";


describe("the Overview of an empty database", () => {
  it("answers with no source and nothing counted", async () => {
    const overview = await getOverview();
    expect(overview.sources).toEqual([]);
  });
});
