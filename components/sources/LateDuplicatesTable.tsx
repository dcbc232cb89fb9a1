"use client";

import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { EventLink } from "@/components/ui/EventLink";
import { formatCount, formatDateTime } from "@/components/ui/format";
import { humanDuration } from "@/lib/retention/advisor";
import { lateDuplicatesQuery } from "./advisor-queries";
import { Table } from "@/components/ui/Table";
import textStyles from "@/components/ui/text.module.css";
import loadMoreStyles from "@/components/ui/LoadMore.module.css";
import { Loading } from "@/components/ui/Loading";

/**
 * Events processed twice because their key had expired when a later delivery came, newest first, each
 * linking to its event page (the whole timeline). Paged by cursor. Loads its own data.
 */
export function LateDuplicatesTable({ name, window }: { name: string; window: string }) {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1];
  const { data, error, isPending, isFetching, refetch } = useQuery(lateDuplicatesQuery(name, window, cursor));
  if (isPending) return <Loading>Loading late duplicates…</Loading>;
  if (!data) return <ErrorBox title="The late duplicates could not be loaded" error={error} onRetry={() => void refetch()} retrying={isFetching} />;
  const total = data.perDay.reduce((n, d) => n + d.count, 0);
  if (total === 0) {
    return (
      <EmptyState title={`No late duplicate in the last ${window}`}>
        <p>
          No event of {name} was claimed again after its key had expired: every delivery so far met a live key. New ones show up
          here within about three minutes.
        </p>
      </EmptyState>
    );
  }
  const viaReplay = data.perDay.reduce((n, d) => n + d.viaReplay, 0);
  return (
    <div data-testid="late-duplicates">
      <p className="muted">
        {formatCount(total)} event{total === 1 ? " was" : "s were"} processed twice in the last {window}
        {viaReplay > 0 && <> ({formatCount(viaReplay)} of them by a replay)</>}: a delivery came after the key had expired.
      </p>
      <Table caption="Late duplicates, newest first" columns={["Event", "Type", "First claimed", "Processed again", "Gap", "Key then", "By"]}>
        {data.items.map((r) => (
          <tr key={`${r.eventId}@${r.lateClaimAt}`}>
            <td>
              <EventLink source={name} eventId={r.eventId} />
            </td>
            <td className="mono">{r.eventType ?? <span className="muted">—</span>}</td>
            <td>
              <time dateTime={r.firstClaimAt}>{formatDateTime(r.firstClaimAt)}</time>
            </td>
            <td>
              <time dateTime={r.lateClaimAt}>{formatDateTime(r.lateClaimAt)}</time>
            </td>
            <td>{humanDuration(r.gapSeconds)}</td>
            <td>{r.keyState === "pruned" ? "pruned" : "expired, still stored"}</td>
            <td>
              {r.viaReplay ? (
                <span className={textStyles.badge} title="The late claim came while a Keyward replay re-drove this event">
                  replay
                </span>
              ) : (
                <span className="mono small">{r.lateActor ?? "—"}</span>
              )}
            </td>
          </tr>
        ))}
      </Table>
      <div className={loadMoreStyles.loadMore}>
        {cursors.length > 1 && (
          <button type="button" className="button button--small" onClick={() => setCursors((c) => c.slice(0, -1))}>
            Newer
          </button>
        )}
        {data.next && (
          <button type="button" className="button button--small" onClick={() => setCursors((c) => [...c, data.next])}>
            Older
          </button>
        )}
      </div>
    </div>
  );
}
