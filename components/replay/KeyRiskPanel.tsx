"use client";

import { useQuery } from "@tanstack/react-query";
import { QueryView } from "@/components/ui/QueryView";
import { EventLink } from "@/components/ui/EventLink";
import { formatDateTime } from "@/components/ui/format";
import { keyRiskHeadline, keysAtRisk } from "./prepare";
import { keyRiskQuery } from "./queries";
import { useNow } from "./useNow";
import type { DeadLetterList } from "@/lib/deadletters/schema";
import { Table } from "@/components/ui/Table";

/**
 * The warning: pending dead letters whose keys already expired or expire within 24 h, soonest first. A
 * replay of one with an expired key may process it twice; one expiring soon must be replayed (or its key
 * extended) before then. Nothing shows while no key is at risk.
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

function KeyRisks({ data, now }: { data: DeadLetterList; now: number }) {
  const headline = keyRiskHeadline(data.counts.keyRisk);
  if (!headline) return null;
  const risks = keysAtRisk(data.items, now);
  const atRisk = data.counts.keyRisk.expired + data.counts.keyRisk.expiringSoon;
  return (
    <section className="callout callout--warn" aria-labelledby="key-risk-title">
      <h2 className="callout__title" id="key-risk-title">
        Keys at risk
      </h2>
      <p className="callout__body">
        {headline} Without a live key nothing stops a duplicate: the preflight shows which of these were processed before.
        Replay the ones still protected (or extend their keys in the wizard) before their keys expire.
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
    </section>
  );
}
