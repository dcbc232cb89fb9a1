"use client";

import { useQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { QueryView } from "@/components/ui/QueryView";
import { EventLink } from "@/components/ui/EventLink";
import { formatDateTime } from "@/components/ui/format";
import { keyRiskHeadline, keysAtRisk } from "./prepare";
import { keyRiskQuery } from "./queries";
import { useNow } from "./useNow";
import type { DeadLetterList } from "@/lib/deadletters/schema";
import { Table } from "@/components/ui/Table";

/**
 * The warning: pending dead letters that were processed and have no live key any more, or whose key
 * expires within 24 h, soonest first. The list collapses to the headline (collapsed at first above
 * KEY_RISK_OPEN_UP_TO), so the dead letters below stay in view. Nothing shows while no key is at risk.
 */
export function KeyRiskPanel({ source }: { source: string | undefined }) {
  const now = useNow(30_000);
  const query = useQuery(keyRiskQuery(source));
  return (
    <QueryView query={query} loading={null} errorTitle="Keys at risk could not be checked">
      {(data) => <KeyRisks data={data} now={now} />}
    </QueryView>
  );
}

/** The list starts open with at most this many keys at risk, collapsed above. */
const KEY_RISK_OPEN_UP_TO = 5;

function KeyRisks({ data, now }: { data: DeadLetterList; now: number }) {
  const headline = keyRiskHeadline(data.counts.keyRisk);
  const risks = keysAtRisk(data.items, now);
  // Collapsible so the dead letters stay in view: open at first only when the list is short.
  const [open, setOpen] = useState(risks.length <= KEY_RISK_OPEN_UP_TO);
  const listId = useId();
  if (!headline) return null;
  const atRisk = data.counts.keyRisk.expired + data.counts.keyRisk.expiringSoon;
  return (
    <section className="callout callout--warn" aria-labelledby="key-risk-title" data-testid="key-risk">
      <h2 className="callout__title" id="key-risk-title">
        Keys at risk
      </h2>
      <p className="callout__body">
        {headline}{" "}
        <button type="button" className="button button--small" aria-expanded={open} aria-controls={listId} onClick={() => setOpen(!open)}>
          {open ? "Hide the list" : `Show the list (${risks.length})`}
        </button>
      </p>
      <div id={listId} hidden={!open}>
        <p className="callout__body">
        These events were processed before and have no live key any more (a replay would process them again), or their key
        expires within 24 h. Dead letters never processed are safe to replay and not counted. Replay the ones still protected
        (or extend their keys in the wizard) before their keys expire.
      </p>
      {risks.length > 0 && (
        <Table caption="Keys at risk, soonest first" columns={["Event", "Source", "Key", "Failed"]}>
          {risks.map((r) => (
            <tr key={r.item.id}>
              <td>
                <EventLink source={r.item.source} eventId={r.item.eventId} />
              </td>
              <td className="source-name">{r.item.source}</td>
              <td className={r.expired ? "warn-text" : undefined}>{r.label}</td>
              <td className="nowrap">{formatDateTime(r.item.failedAt)}</td>
            </tr>
          ))}
        </Table>
      )}
      {atRisk > risks.length && <p className="muted small">Showing the {risks.length} soonest of {atRisk}.</p>}
      </div>
    </section>
  );
}
