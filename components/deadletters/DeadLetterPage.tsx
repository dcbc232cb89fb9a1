"use client";

import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { CopyButton } from "@/components/ui/CopyButton";
import { EventLink } from "@/components/ui/EventLink";
import { LoadMore } from "@/components/ui/LoadMore";
import { PageHeader } from "@/components/ui/PageHeader";
import { Panel } from "@/components/ui/Panel";
import { QueryView } from "@/components/ui/QueryView";
import { Table } from "@/components/ui/Table";
import { formatBytes, formatCount, formatDateTime } from "@/components/ui/format";
import type { DeadLetterDetail } from "@/lib/deadletters/schema";
import { attemptsQuery, deadLetterQuery } from "./queries";
import { downloadName, payloadBytes, prettyPayload } from "./prepare";
import styles from "./deadletters.module.css";

/**
 * /dead-letters/{id}: one dead letter's evidence: the payload (pretty-printed when JSON, copyable, the
 * stored bytes downloadable), the original error, and every replay attempt with load-more.
 */
export function DeadLetterPage({ id }: { id: string }) {
  const query = useQuery(deadLetterQuery(id));
  return (
    <>
      <PageHeader
        title="Dead letter"
        description={
          <>
            One failed event, its payload exactly as stored and every replay attempt. <Link href="/replay">All dead letters</Link>
          </>
        }
      />
      <QueryView query={query} loading="Loading the dead letter…" errorTitle="The dead letter could not be loaded">
        {(letter) => <Letter letter={letter} />}
      </QueryView>
    </>
  );
}

function Letter({ letter }: { letter: DeadLetterDetail }) {
  return (
    <>
      <Panel title={<>Event <EventLink source={letter.source} eventId={letter.eventId} /></>} badge={<span className="status" data-testid="dead-letter-status">{letter.status}</span>}>
        <dl className="detail-list">
          <div>
            <dt>Source</dt>
            <dd>
              <Link href={`/replay?source=${encodeURIComponent(letter.source)}`}>{letter.source}</Link>
            </dd>
          </div>
          <div>
            <dt>Type</dt>
            <dd className="mono">{letter.eventType}</dd>
          </div>
          <div>
            <dt>Failed</dt>
            <dd>
              {formatDateTime(letter.failedAt, true)} after {formatCount(letter.attempts)} attempt{letter.attempts === 1 ? "" : "s"}
              {letter.queue && <> · queue {letter.queue}</>}
            </dd>
          </div>
          <div>
            <dt>Original error</dt>
            <dd className="mono" data-testid="original-error">
              {letter.error}
            </dd>
          </div>
          {letter.lastReplayError && (
            <div>
              <dt>Last replay answer</dt>
              <dd className="mono">{letter.lastReplayError}</dd>
            </div>
          )}
          {letter.settledBy && (
            <div>
              <dt>{letter.status === "discarded" ? "Discarded" : letter.status === "resolved" ? "Resolved" : "Settled"} by</dt>
              <dd>
                {letter.settledBy}
                {letter.settledAt && <> at {formatDateTime(letter.settledAt, true)}</>}
                {letter.settleReason && <>: {letter.settleReason}</>}
              </dd>
            </div>
          )}
        </dl>
      </Panel>
      <Payload letter={letter} />
      <Attempts id={letter.id} />
    </>
  );
}

function Payload({ letter }: { letter: DeadLetterDetail }) {
  const shown = letter.payloadText === null ? null : prettyPayload(letter.payloadText);
  const download = () => {
    const blob = new Blob([payloadBytes(letter.payloadBase64) as BlobPart], { type: letter.contentType });
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = downloadName(letter.eventId, letter.contentType);
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  };
  return (
    <Panel
      title="Payload"
      actions={
        <div className="row-actions">
          {letter.payloadText !== null && <CopyButton text={letter.payloadText} label="Copy payload" />}
          <button type="button" className="button button--small" onClick={download}>
            Download raw bytes
          </button>
        </div>
      }
    >
      <p className="muted small">
        {letter.contentType} · {formatBytes(letter.payloadBytes)}
        {shown?.json && " · pretty-printed for reading; copy and download give the bytes as stored"}
      </p>
      {shown ? (
        <pre className={styles.payload} data-testid="payload">
          {shown.text}
        </pre>
      ) : (
        <p className="muted">Not UTF-8 text: download the raw bytes to look at them.</p>
      )}
    </Panel>
  );
}

function Attempts({ id }: { id: string }) {
  const query = useInfiniteQuery(attemptsQuery(id));
  const items = query.data?.pages.flatMap((p) => p.items) ?? [];
  return (
    <Panel title="Replay attempts">
      <QueryView query={query} loading="Loading attempts…" errorTitle="The attempts could not be loaded" empty={() => items.length === 0 && <p className="muted">Never replayed.</p>}>
        {() => (
          <LoadMore query={query}>
            <Table caption="Replay attempts, newest first" columns={["Time", "Replay", "Destination", "Status", { label: "Latency", num: true }, "Response (first 2 KiB)", "Error"]} wrap>
              {items.map((a) => (
                <tr key={a.id} data-testid="attempt">
                  <td className="nowrap">
                    {formatDateTime(a.at, true)} <span className="muted small">#{a.attempt}</span>
                  </td>
                  <td>
                    <Link className="mono small" href={`/replays/${a.replayId}`}>
                      {a.replayId.slice(0, 8)}
                    </Link>
                  </td>
                  <td className="mono small">{a.destination}</td>
                  <td>{a.status ?? "—"}</td>
                  <td className="num">{formatCount(a.latencyMs)} ms</td>
                  <td>
                    {a.responseBody ? <pre className={styles.response}>{a.responseBody}</pre> : <span className="muted">—</span>}
                  </td>
                  <td className="mono small">{a.error ?? (a.outcome === "delivered" ? "delivered" : "—")}</td>
                </tr>
              ))}
            </Table>
          </LoadMore>
        )}
      </QueryView>
    </Panel>
  );
}
