"use client";

import { useQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { QueryView } from "@/components/ui/QueryView";
import { EventLink } from "@/components/ui/EventLink";
import { formatDateTime } from "@/components/ui/format";
import { CATEGORY_INFO } from "./categories";
import { keyRiskHeadline, keysAtRisk } from "./key-risk";
import { keyRiskQuery } from "./queries";
import { useNow } from "./useNow";
import type { DeadLetterList } from "@/lib/deadletters/schema";
import { Status } from "@/components/ui/Status";
import { Table } from "@/components/ui/Table";
import { clsx } from "clsx";
import calloutStyles from "@/components/ui/Callout.module.css";
import textStyles from "@/components/ui/text.module.css";
import tableStyles from "@/components/ui/Table.module.css";

/**
 * The warning: pending dead letters that were processed and have no live key any more (at risk: a replay
 * would process them twice), and those still protected whose key expires within 24 h, soonest first, each
 * with the preflight's verdict (one function decides both: lib/keys/verdict.ts). The list collapses to the headline (collapsed at first above
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
    <section className={clsx(calloutStyles.callout, calloutStyles.warn)} aria-labelledby="key-risk-title" data-testid="key-risk">
      <h2 className={calloutStyles.title} id="key-risk-title">
        {headline.title}
      </h2>
      <p className={calloutStyles.body}>
        {headline.text}{" "}
        <button type="button" className="button button--small" aria-expanded={open} aria-controls={listId} onClick={() => setOpen(!open)}>
          {open ? "Hide the list" : `Show the list (${risks.length})`}
        </button>
      </p>
      <div id={listId} hidden={!open}>
        <p className={calloutStyles.body}>
        &ldquo;Expired, processed&rdquo;: processed before and no live key any more, a replay would process it again (the preflight
        excludes it unless forced). &ldquo;Key alive&rdquo;: protected now (a duplicate is rejected by the claim), but the key
        expires within 24 h: replay it, or extend its key in the wizard, before then. Dead letters never processed are safe to
        replay and not listed.
      </p>
      {risks.length > 0 && (
        <Table caption="Keys at risk or expiring, soonest first" columns={["Event", "Verdict", "Key", "Source", "Failed"]}>
          {risks.map((r) => (
            <tr key={r.item.id}>
              <td>
                <EventLink source={r.item.source} eventId={r.item.eventId} />
              </td>
              <td>
                <Status tone={CATEGORY_INFO[r.verdict].tone}>{CATEGORY_INFO[r.verdict].label}</Status>
              </td>
              <td className={r.expired ? "warn-text" : undefined}>{r.label}</td>
              <td className={textStyles.sourceName}>{r.item.source}</td>
              <td className={tableStyles.nowrap}>{formatDateTime(r.item.failedAt)}</td>
            </tr>
          ))}
        </Table>
      )}
      {atRisk > risks.length && <p className="muted small">Showing the {risks.length} soonest of {atRisk}.</p>}
      </div>
    </section>
  );
}
