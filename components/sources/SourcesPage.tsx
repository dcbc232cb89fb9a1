"use client";

import { useQuery } from "@tanstack/react-query";
import { useCan } from "@/components/auth/SessionProvider";
import { CommandBlock } from "@/components/ui/CommandBlock";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { PageHeader } from "@/components/ui/PageHeader";
import { Panel } from "@/components/ui/Panel";
import { CreateSourceForm } from "./CreateSourceForm";
import { PresetsPanel } from "./PresetsPanel";
import { presetsQuery } from "./queries";
import { SourcesDataTable } from "./SourcesDataTable";
import textStyles from "@/components/ui/text.module.css";

/** Sources for everyone; creating and editing for admins, extending live keys for operators. */
export function SourcesPage() {
  const canEdit = useCan("admin");
  const presets = useQuery(presetsQuery());
  return (
    <>
      <PageHeader
        title="Sources"
        description="Each sender of events and how long its dedup keys live: TTL = retry window + queue lag + clock skew + replay."
      />
      {canEdit && <CreateSourceForm presets={presets.data} />}
      <h2 className={textStyles.sectionTitle}>All sources</h2>
      <SourcesDataTable presets={presets.data} />
      {presets.data ? (
        <PresetsPanel presets={presets.data} />
      ) : (
        presets.isError && <ErrorBox title="The presets could not be loaded" error={presets.error} />
      )}
      <Panel title="In a terminal">
        <CommandBlock command="npx keyward source create stripe-billing --preset stripe --dead-letter-retention 2d" />
        <CommandBlock command="npx keyward source presets" />
      </Panel>
    </>
  );
}
