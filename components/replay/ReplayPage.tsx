"use client";

import { useState } from "react";
import { usePathname, useRouter } from "next/navigation";
import type { Preflight } from "@/lib/replay/schema";
import { useCan } from "@/components/auth/SessionProvider";
import { PageHeader } from "@/components/ui/PageHeader";
import { DeadLetterFiltersForm } from "./DeadLetterFilters";
import { DeadLettersDataTable } from "./DeadLettersDataTable";
import { KeyRiskPanel } from "./KeyRiskPanel";
import { filterParams, type DeadLetterFilters } from "./dead-letter-list";
import { type Selection } from "./wizard";
import { ReplayProgress } from "./ReplayProgress";
import { ReplaysDataTable } from "./ReplaysDataTable";
import { ReplayWizard } from "./ReplayWizard";
import textStyles from "@/components/ui/text.module.css";

/**
 * Dead letters (filters, counts, keys at risk) and replays for everyone; the replay wizard for operators.
 * One wizard at a time; opening a replay from the list shows its progress or results. The filters (the
 * selected source among them) live in the URL, so a link to /replay?source=…&status=…&from=… opens the
 * same view (the server page reads them back: `initialFilters`).
 */
export function ReplayPage({ initialFilters = {} }: { initialFilters?: DeadLetterFilters }) {
  const canOperate = useCan("operator");
  const router = useRouter();
  const pathname = usePathname();
  const [filters, setFiltersState] = useState<DeadLetterFilters>(initialFilters);
  const setFilters = (f: DeadLetterFilters) => {
    setFiltersState(f);
    const q = filterParams(f).toString();
    router.replace(q ? `${pathname}?${q}` : pathname, { scroll: false });
  };
  const [wizard, setWizard] = useState<{ selection: Selection; n: number; initial?: Preflight } | null>(null);
  const [opened, setOpened] = useState<string | null>(null);
  const retry = (pf: Preflight) => {
    setOpened(null);
    setWizard((w) => ({ selection: { kind: "ids", source: pf.source, ids: pf.items.map((i) => i.deadLetterId) }, n: (w?.n ?? 0) + 1, initial: pf }));
  };
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
          initial={wizard.initial}
          onClose={() => setWizard(null)}
          // A retry of a finished replay's failures is a new replay: go to its page (the URL names it).
          onStarted={wizard.initial ? (id) => router.push(`/replays/${id}`) : undefined}
        />
      )}
      {opened && <ReplayProgress replayId={opened} onClose={() => setOpened(null)} onRetry={canOperate ? retry : undefined} />}
      <h2 className={textStyles.sectionTitle}>Dead letters</h2>
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
      <h2 className={textStyles.sectionTitle}>Replays</h2>
      <ReplaysDataTable onOpen={(id) => setOpened(id)} />
    </>
  );
}
