"use client";

import { useQuery } from "@tanstack/react-query";
import { useCan } from "@/components/auth/SessionProvider";
import { EmptyState } from "@/components/ui/EmptyState";
import { QueryView } from "@/components/ui/QueryView";
import { sourcesSummary } from "./describe";
import { sourcesQuery, type PresetItem } from "./queries";
import { SourceCard } from "./SourceCard";
import styles from "./sources.module.css";

/** Loads the sources and picks what to show: loading, error, none yet, or a card per source. */
export function SourcesDataTable({ presets }: { presets: PresetItem[] | undefined }) {
  const canEdit = useCan("admin");
  const canExtend = useCan("operator");
  const query = useQuery(sourcesQuery());
  return (
    <QueryView
      query={query}
      loading="Loading sources…"
      errorTitle="The sources could not be loaded"
      empty={(sources) =>
        sources.length === 0 && (
          <EmptyState title="No source yet">
            <p>
              A source is one sender of events, and its keys live for its TTL.{" "}
              {canEdit ? "Create one above." : "An admin creates them, here or with the CLI."}
            </p>
          </EmptyState>
        )
      }
    >
      {(sources) => (
        <>
          <p className="muted">{sourcesSummary(sources)}</p>
          <ul className={styles.list}>
            {sources.map((s) => (
              <li key={s.name}>
                <SourceCard source={s} presets={presets} canEdit={canEdit} canExtend={canExtend} />
              </li>
            ))}
          </ul>
        </>
      )}
    </QueryView>
  );
}
