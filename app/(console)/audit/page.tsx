import type { Metadata } from "next";
import { Suspense } from "react";
import { AuditPage } from "@/components/audit/AuditPage";

export const metadata: Metadata = { title: "Audit" };

/** Every signed-in role (viewer and up) searches the audit history. */
export default function Page() {
  return (
    <Suspense fallback={<p className="muted">Loading…</p>}>
      <AuditPage />
    </Suspense>
  );
}
