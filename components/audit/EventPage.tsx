"use client";

import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { QueryView } from "@/components/ui/QueryView";
import { PageHeader } from "@/components/ui/PageHeader";
import { Panel } from "@/components/ui/Panel";
import { formatCount, formatDateTime } from "@/components/ui/format";
import { EventTimeline } from "./EventTimeline";
import { formatInstants } from "./prepare";
import styles from "./audit.module.css";
import { eventQuery, filterParams, type EventAnswer } from "./queries";

const FATE_CLASS: Record<EventAnswer["fate"], string> = {
  alive: "status--ok",
  expired: "status--warn",
  pruned: "status--off",
  released: "status--warn",
  missing: "status--error",
  never_seen: "status--off",
};

const FATE_LABEL: Record<EventAnswer["fate"], string> = {
  alive: "Key alive",
  expired: "Key expired, not pruned yet",
  pruned: "Key expired and pruned",
  released: "Key released",
  missing: "Key missing",
  never_seen: "Never seen",
};

const when = (iso: string | null) => (iso ? <time dateTime={iso} title={iso}>{formatDateTime(iso, true)}</time> : <span className="muted">—</span>);

/** "Did we process this event?": the answer in one sentence, the key facts, and the audit timeline. */
export function EventPage({ source, eventId }: { source: string; eventId: string }) {
  const query = useQuery(eventQuery(source, eventId));
  return (
    <>
      <PageHeader
        title={eventId}
        description={
          <>
            Event of source <span className="mono">{source}</span> ·{" "}
            <Link href={`/audit?${filterParams({ source })}`}>search this source&apos;s history</Link>
          </>
        }
      />
      <QueryView query={query} loading="Looking up the key and the audit history…" errorTitle="This event could not be looked up">
        {(data) => (
          <>
            <Panel aria-label="Answer">
              <p className={styles.sentence} data-testid="event-headline">
                <span className={`status ${FATE_CLASS[data.fate]}`}>{FATE_LABEL[data.fate]}</span>{" "}
                <strong>{formatInstants(data.headline, (iso) => formatDateTime(iso, true))}</strong>
              </p>
              {data.headline !== data.sentence && <p className="muted">{formatInstants(data.sentence, (iso) => formatDateTime(iso, true))}</p>}
              {data.otherSources.length > 0 && (
                <p className="warn-text" role="status" data-testid="other-sources">
                  Not found under <span className="mono">{source}</span>, but this id exists under{" "}
                  {data.otherSources.map((other, i) => (
                    <span key={other}>
                      {i > 0 && ", "}
                      <Link href={`/events/${encodeURIComponent(other)}/${encodeURIComponent(eventId)}`}>{other}</Link>
                    </span>
                  ))}
                  .
                </p>
              )}
              <dl className="detail-list">
                <Fact label="Status now">{data.status ?? <span className="muted">no key</span>}</Fact>
                <Fact label="Event type">{data.eventType ? <span className="mono">{data.eventType}</span> : <span className="muted">—</span>}</Fact>
                <Fact label="Processed at">{when(data.processedAt)}</Fact>
                {data.completedAt && <Fact label="Completed at">{when(data.completedAt)}</Fact>}
                {data.releasedAt && <Fact label="Released at">{when(data.releasedAt)}</Fact>}
                <Fact label={data.fate === "alive" ? "Key alive until" : "Key expired at"}>{when(data.keyExpiresAt)}</Fact>
                {data.leaseExpiresAt && <Fact label="Lease until">{when(data.leaseExpiresAt)}</Fact>}
                <Fact label="First seen">{when(data.firstSeenAt)}</Fact>
                <Fact label="Last seen">{when(data.lastSeenAt)}</Fact>
                <Fact label="Duplicates">
                  {data.duplicateCount === null ? <span className="muted">not kept once the key is gone</span> : formatCount(data.duplicateCount)}
                </Fact>
                <Fact label="Claims in the history">{formatCount(data.claims)}</Fact>
              </dl>
              <p className="muted small">
                As of {formatDateTime(data.asOf, true)} (database clock). The audit history is kept {data.retentionDays} days.
              </p>
            </Panel>
            <h2 className="section-title">Timeline</h2>
            {data.timeline.length === 0 ? (
              <EmptyState title="No audit rows">
                <p>Nothing about this event in the last {data.retentionDays} days: it was never claimed through Keyward, or its history has been dropped.</p>
              </EmptyState>
            ) : (
              <>
                {data.timelineTruncated && <p className="muted">Only the newest {data.timeline.length} rows are shown.</p>}
                <EventTimeline rows={data.timeline} />
              </>
            )}
          </>
        )}
      </QueryView>
    </>
  );
}

function Fact({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div className="detail-list__item">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}
