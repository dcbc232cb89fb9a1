"use client";

import { Download, RotateCcw } from "lucide-react";
import { useInfiniteQuery, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { useCan } from "@/components/auth/SessionProvider";
import { ReplayWizard } from "@/components/replay/ReplayWizard";
import { useNow } from "@/components/replay/useNow";
import { CopyButton } from "@/components/ui/CopyButton";
import { CopyLinkButton } from "@/components/ui/CopyLinkButton";
import { EventLink } from "@/components/ui/EventLink";
import { LoadMore } from "@/components/ui/LoadMore";
import { PageHeader } from "@/components/ui/PageHeader";
import { Panel } from "@/components/ui/Panel";
import { QueryView } from "@/components/ui/QueryView";
import { Table } from "@/components/ui/Table";
import { formatBytes, formatCount, formatDateTime } from "@/components/ui/format";
import { PAYLOAD_PREVIEW_BYTES, type DeadLetterDetail } from "@/lib/deadletters/schema";
import { attemptsQuery, deadLetterQuery } from "./queries";
import { describeKey } from "./key-state";
import { downloadName, payloadBytes, prettyPayload } from "./payload";
import styles from "./deadletters.module.css";
import listStyles from "@/components/ui/DetailList.module.css";
import tableStyles from "@/components/ui/Table.module.css";
import { Status } from "@/components/ui/Status";
import { Icon } from "@/components/ui/Icon";

/**
 * /dead-letters/{id}: one dead letter's evidence: the payload (pretty-printed when JSON, copyable, the
 * stored bytes downloadable; a payload over 1 MiB shows its first 1 MiB and downloads whole from
 * GET /api/v1/dead-letters/{id}/payload), the sender's headers a raw intake kept, the original error, and
 * every replay attempt with load-more.
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
        aside={<CopyLinkButton path={`/dead-letters/${id}`} label="Copy link to this dead letter" />}
      />
      <QueryView query={query} loading="Loading the dead letter…" errorTitle="The dead letter could not be loaded">
        {(letter) => <Letter letter={letter} />}
      </QueryView>
    </>
  );
}

function Letter({ letter }: { letter: DeadLetterDetail }) {
  const canOperate = useCan("operator");
  const now = useNow(30_000);
  const [replaying, setReplaying] = useState(0);
  const key = describeKey(letter.key, now);
  return (
    <>
      {canOperate && replaying > 0 && (
        <ReplayWizard
          key={replaying}
          selection={{ kind: "ids", source: letter.source, ids: [letter.id] }}
          autoRun
          onClose={() => setReplaying(0)}
        />
      )}
      <Panel
        className={styles.fullWidth}
        title={<>Event <EventLink source={letter.source} eventId={letter.eventId} /></>}
        badge={<Status data-testid="dead-letter-status">{letter.status}</Status>}
        actions={
          canOperate &&
          letter.status === "pending" && (
            <button type="button" className="button button--small" onClick={() => setReplaying((n) => n + 1)}>
              <Icon icon={RotateCcw} size="sm" />
              Replay this letter
            </button>
          )
        }
      >
        <dl className={listStyles.list}>
          <div>
            <dt>Dedup key</dt>
            <dd data-testid="dead-letter-key">
              <Status tone={key.tone}>{key.label}</Status> {key.detail}
              {letter.key.expiresAt && (
                <>
                  {" "}
                  <time dateTime={letter.key.expiresAt} title={formatDateTime(letter.key.expiresAt, true)}>
                    ({formatDateTime(letter.key.expiresAt, true)})
                  </time>
                </>
              )}
            </dd>
          </div>
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
          {letter.senderHeaders.length > 0 && (
            <div>
              <dt>Sender headers</dt>
              <dd>
                <ul className={styles.headers} data-testid="sender-headers">
                  {letter.senderHeaders.map((h, i) => (
                    <li key={i} className="mono small">
                      <span className={styles.headerName}>{h.name}:</span> {h.value}
                    </li>
                  ))}
                </ul>
              </dd>
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
      className={styles.fullWidth}
      title="Payload"
      actions={
        <div className={tableStyles.rowActions}>
          {letter.payloadText !== null && !letter.payloadTruncated && <CopyButton text={letter.payloadText} label="Copy payload" />}
          {letter.payloadTruncated ? (
            <a className="button button--small" href={`/api/v1/dead-letters/${encodeURIComponent(letter.id)}/payload`} download>
              <Icon icon={Download} size="sm" />
              Download all {formatBytes(letter.payloadBytes)}
            </a>
          ) : (
            <button type="button" className="button button--small" onClick={download}>
              <Icon icon={Download} size="sm" />
              Download raw bytes
            </button>
          )}
        </div>
      }
    >
      <p className="muted small">
        {letter.contentType} · {formatBytes(letter.payloadBytes)}
        {letter.payloadTruncated && <> · showing its first {formatBytes(PAYLOAD_PREVIEW_BYTES)}: download it for the whole</>}
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
    // LoadMore's Refresh and Load more stay inside this card: the table scrolls sideways within it.
    <Panel title="Replay attempts" className={styles.attemptsPanel}>
      <QueryView query={query} loading="Loading attempts…" errorTitle="The attempts could not be loaded" empty={() => items.length === 0 && <p className="muted">Never replayed. An operator replays it with “Replay this letter” above, or with others from the Replay screen.</p>}>
        {() => (
          <>
            <Table caption="Replay attempts, newest first" columns={["Time", "Replay", "Destination", "Status", { label: "Latency", num: true }, "Response (first 2 KiB)", "Error"]} wrap>
              {items.map((a) => (
                <tr key={a.id} data-testid="attempt">
                  <td className={tableStyles.nowrap}>
                    {formatDateTime(a.at, true)} <span className="muted small">#{a.attempt}</span>
                  </td>
                  <td>
                    <Link className="mono small" href={`/replays/${a.replayId}`}>
                      {a.replayId.slice(0, 8)}
                    </Link>
                  </td>
                  <td className="mono small">{a.destination}</td>
                  <td>{a.status ?? "—"}</td>
                  <td className={tableStyles.num}>{formatCount(a.latencyMs)} ms</td>
                  <td>
                    {a.responseBody ? <pre className={styles.response}>{a.responseBody}</pre> : <span className="muted">—</span>}
                    {(a.requestHeaders || a.responseHeaders) && (
                      <details className={styles.attemptHeaders}>
                        <summary>Headers</summary>
                        {a.requestHeaders && <HeaderList title="Sent (secrets masked)" headers={a.requestHeaders} testId="request-headers" />}
                        {a.responseHeaders && <HeaderList title="Received" headers={a.responseHeaders} testId="response-headers" />}
                      </details>
                    )}
                  </td>
                  <td className="mono small">{a.error ?? (a.outcome === "delivered" ? "delivered" : "—")}</td>
                </tr>
              ))}
            </Table>
            {/* Below the table, inside the card (the table is not LoadMore's child: it would sit beside Refresh and push it out). */}
            <LoadMore query={query}>
              {formatCount(items.length)} attempt{items.length === 1 ? "" : "s"} shown
            </LoadMore>
          </>
        )}
      </QueryView>
    </Panel>
  );
}

function HeaderList({ title, headers, testId }: { title: string; headers: [string, string][]; testId: string }) {
  return (
    <>
      <p className="small muted">{title}</p>
      <ul className={styles.headers} data-testid={testId}>
        {headers.map(([name, value], i) => (
          <li key={i} className="mono small">
            <span className={styles.headerName}>{name}:</span> {value}
          </li>
        ))}
      </ul>
    </>
  );
}
