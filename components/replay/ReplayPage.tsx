"use client";

import { useState } from "react";
import { useCan } from "@/components/auth/SessionProvider";
import { PageHeader } from "@/components/ui/PageHeader";
import { DeadLetterFiltersForm } from "./DeadLetterFilters";
import { DeadLettersDataTable } from "./DeadLettersDataTable";
import { KeyRiskPanel } from "./KeyRiskPanel";
import type { DeadLetterFilters, Selection } from "./prepare";
import { ReplayProgress } from "./ReplayProgress";
import { ReplaysDataTable } from "./ReplaysDataTable";
import { ReplayWizard } from "./ReplayWizard";

/**
 * Dead letters (filters, counts, keys at risk) and replays for everyone; the replay wizard for operators.
 * One wizard at a time; opening a replay from the list shows its progress or results.
 */
export function ReplayPage() {
  const canOperate = useCan("operator");
  const [filters, setFilters] = useState<DeadLetterFilters>({});
  const [wizard, setWizard] = useState<{ selection: Selection; n: number } | null>(null);
  const [opened, setOpened] = useState<string | null>(null);
  return (
    <>
      <PageHeader
        title="Replay"
        description="Re-drive dead-lettered events safely: a preflight checks each event's dedup key first, so nothing already processed runs twice by accident."
      />
      <KeyRiskPanel source={filters.source} />
      {canOperate && wizard && (
        <ReplayWizard
          key={wizard.n}
          selection={wizard.selection}
          onClose={() => setWizard(null)}
        />
      )}
      {opened && <ReplayProgress replayId={opened} onClose={() => setOpened(null)} />}
      <h2 className="section-title">Dead letters</h2>
      <DeadLetterFiltersForm filters={filters} onChange={setFilters} />
      <DeadLettersDataTable
        key={JSON.stringify(filters)}
        filters={filters}
        onFilter={setFilters}
        canOperate={canOperate}
        onReplay={(selection) => {
          setOpened(null);
          setWizard((w) => ({ selection, n: (w?.n ?? 0) + 1 }));
        }}
      />
      <h2 className="section-title">Replays</h2>
      <ReplaysDataTable onOpen={(id) => setOpened(id)} />
    </>
  );
}
