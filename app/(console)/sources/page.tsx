import type { Metadata } from "next";
import { SourceSettingsDataTable } from "@/components/overview/SourceSettingsDataTable";
import { CommandBlock } from "@/components/ui/CommandBlock";
import { PageHeader } from "@/components/ui/PageHeader";

export const metadata: Metadata = { title: "Sources" };

export default function Page() {
  return (
    <>
      <PageHeader
        title="Sources"
        description="Each sender of events and how long its dedup keys live: retry window + queue lag + clock skew + replay."
      />
      <SourceSettingsDataTable />
      <section className="panel">
        <h2 className="section-title">Managing sources</h2>
        <p>
          Sources are managed with the CLI for now; creating and editing them here comes with a later release. A new
          source needs a deliberate lifetime for its keys:
        </p>
        <CommandBlock command="npx keyward source create <name> --retry-window 3d --queue-lag 1d --clock-skew 5m --replay 3d" />
        <p>The same list, in a terminal:</p>
        <CommandBlock command="npx keyward source list" />
      </section>
    </>
  );
}
