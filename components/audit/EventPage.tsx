"use client";

import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { QueryView } from "@/components/ui/QueryView";
import { PageHeader } from "@/components/ui/PageHeader";
import { Panel } from "@/components/ui/Panel";
import { formatCount, formatDateTime } from "@/components/ui/format";
import { EventTimeline } from "./EventTimeline";
import { formatInstants } from "./view";
import styles from "./audit.module.css";
import { eventQuery, filterParams, type EventAnswer } from "./queries";
import listStyles from "@/components/ui/DetailList.module.css";
import textStyles from "@/components/ui/text.module.css";
import calloutStyles from "@/components/ui/Callout.module.css";
import { clsx } from "clsx";
import { humanDuration } from "@/lib/retention/advisor";
import { lateDuplicatesHref } from "./view";
import { Status, type Tone } from "@/components/ui/Status";

const FATE_TONE: Record<EventAnswer["fate"], Tone> = {
  alive: "ok",
  expired: "warn",
  pruned: "off",
  released: "warn",
  missing: "error",
  never_seen: "off",
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
                <Status tone={FATE_TONE[data.fate]}>{FATE_LABEL[data.fate]}</Status>{" "}
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
              {data.lateClaims.length > 0 && <ProcessedTwice data={data} />}
              <dl className={listStyles.list}>
                <Fact label="Status now">{data.status ?? <span className="muted">no key</span>}</Fact>
                <Fact label="Event type">{data.eventType ? <span className="mono">{data.eventType}</span> : <span className="muted">—</span>}</Fact>
                {data.lateClaims.length > 0 ? (
                  <Fact label={`Processed ${data.timesProcessed} times`}>
                    {when(data.lateClaims[0].firstClaimAt)}
                    {data.lateClaims.map((l) => (
                      <span key={l.auditId}>
                        {" · again "}
                        {when(l.lateClaimAt)}
                      </span>
                    ))}
                  </Fact>
                ) : (
                  <Fact label="Processed at">{when(data.processedAt)}</Fact>
                )}
                {data.completedAt && <Fact label="Completed at">{when(data.completedAt)}</Fact>}
                {data.releasedAt && <Fact label="Released at">{when(data.releasedAt)}</Fact>}
                <Fact label={data.fate === "alive" ? "Key alive until" : "Key expired at"}>{when(data.keyExpiresAt)}</Fact>
                {data.leaseExpiresAt && <Fact label="Lease until">{when(data.leaseExpiresAt)}</Fact>}
                <Fact label="First seen">{when(data.firstSeenAt)}</Fact>
                <Fact label="Last seen">{when(data.lastSeenAt)}</Fact>
                <Fact label="Duplicates">
                  {data.duplicateCount === null ? <span className="muted">not kept once the key is gone</span> : formatCount(data.duplicateCount)}
                  {data.lateClaims.length > 0 && (
                    <span className="warn-text">
                      {" "}
                      + {formatCount(data.lateClaims.length)} late (processed again after the key had expired)
                    </span>
                  )}
                </Fact>
                <Fact label="Claims in the history">{formatCount(data.claims)}</Fact>
              </dl>
              <p className="muted small">
                As of {formatDateTime(data.asOf, true)} (database clock). The audit history is kept {data.retentionDays} days.
              </p>
            </Panel>
            <h2 className={textStyles.sectionTitle}>Timeline</h2>
            {data.timeline.length === 0 ? (
              <EmptyState title="No audit rows">
                <p>Nothing about this event in the last {data.retentionDays} days: it was never claimed through Keyward, or its history has been dropped.</p>
              </EmptyState>
            ) : (
              <>
                {data.timelineTruncated && <p className="muted">Only the newest {data.timeline.length} rows are shown.</p>}
                <EventTimeline rows={data.timeline} lateIds={new Set(data.lateClaims.map((l) => l.auditId))} />
              </>
            )}
          </>
        )}
      </QueryView>
    </>
  );
}

/** The warning for an event processed more than once: when, the gap, and links to the evidence. */
function ProcessedTwice({ data }: { data: EventAnswer }) {
  const n = data.lateClaims.length;
  return (
    <section className={clsx(calloutStyles.callout, calloutStyles.warn)} aria-labelledby="processed-twice-title" data-testid="processed-twice">
      <h2 className={calloutStyles.title} id="processed-twice-title">
        Processed {data.timesProcessed === 2 ? "twice" : `${data.timesProcessed} times`}
      </h2>
      <p className={calloutStyles.body}>
        First at {when(data.lateClaims[0].firstClaimAt)}
        {data.lateClaims.map((l) => (
          <span key={l.auditId}>
            , and again at {when(l.lateClaimAt)} ({humanDuration(l.gapSeconds)} later{l.viaReplay ? ", by a Keyward replay" : ""}): its key
            had expired{l.keyThen === "pruned" ? " and been pruned" : ""}, so the delivery was not recognised as a duplicate
          </span>
        ))}
        . {n === 1 ? "This is a late duplicate" : "These are late duplicates"}: the source&apos;s TTL was shorter than the gap.
      </p>
      <p className={calloutStyles.body}>
        <Link href={lateDuplicatesHref(data.source, data.lateClaims[n - 1].lateClaimAt, data.asOf)}>
          Late duplicates of {data.source}
        </Link>{" "}
        (the retention advisor&apos;s evidence) ·{" "}
        <Link href={`/audit?${filterParams({ source: data.source, eventId: data.eventId })}`}>these claims in the audit history</Link>
      </p>
    </section>
  );
}

function Fact({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}
