/**
 * GET /api/v1/audit/export?source&eventId&eventIdPrefix&eventType&kind&actor&from&to — the same search as
 * GET /api/v1/audit, every matching row, as a streamed CSV download (text/csv, newest first; cells that
 * look like spreadsheet formulas are prefixed with '). Viewers and up; API keys with scope read.
 */
import { exportAuditCsv } from "@/lib/audit/export";
import { auditFilters } from "@/lib/audit/schema";
import { route } from "@/lib/http/route";

export const GET = route(
  async ({ query }) => {
    const body = await exportAuditCsv(query);
    const stamp = new Date().toISOString().replace(/[:.]/g, "-");
    return new Response(body, {
      headers: {
        "content-type": "text/csv; charset=utf-8",
        "content-disposition": `attachment; filename="keyward-audit-${stamp}.csv"`,
        "cache-control": "no-store",
      },
    });
  },
  {
    allow: ["read"],
    query: auditFilters,
    summary: "The audit search's every matching row as a streamed CSV download",
    responses: { 200: { description: "CSV, newest first (cells that look like formulas are prefixed with ')", contentType: "text/csv" } },
  },
);
