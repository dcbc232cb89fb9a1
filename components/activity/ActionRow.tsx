"use client";

import { Time } from "@/components/ui/Time";
import { useId, useState } from "react";
import { keyOfTarget } from "@/components/audit/view";
import { EventLink } from "@/components/ui/EventLink";
import { formatDateTime, isInstant } from "@/components/ui/format";
import { detailEntries, formatDetailValue } from "./detail";
import type { ActionRecord } from "./queries";
import tableStyles from "@/components/ui/Table.module.css";
import listStyles from "@/components/ui/DetailList.module.css";
import { Status, type Tone } from "@/components/ui/Status";

const OUTCOME_TONE: Record<string, Tone> = { ok: "ok", refused: "warn", failed: "error" };

/** One logged action, and its recorded details (reason, address, before/after) on demand. */
export function ActionRow({ action: a }: { action: ActionRecord }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  const details = detailEntries(a);
  const key = keyOfTarget(a.target);
  return (
    <>
      <tr>
        <td>
          <Time iso={a.at} />
        </td>
        <td className="mono">{a.actor}</td>
        <td className="mono">{a.action}</td>
        <td>
          {key ? (
            <>
              <span className="muted">{a.target!.type}</span>{" "}
              <EventLink source={key.source} eventId={key.eventId}>
                {a.target!.id}
              </EventLink>
            </>
          ) : a.target ? (
            <>
              <span className="muted">{a.target.type}</span> <span className="mono">{a.target.id}</span>
            </>
          ) : (
            <span className="muted">—</span>
          )}
        </td>
        <td>
          <Status tone={OUTCOME_TONE[a.outcome]}>{a.outcome}</Status>
        </td>
        <td>
          {details.length > 0 ? (
            <button
              type="button"
              className="button button--small"
              aria-expanded={open}
              aria-controls={id}
              onClick={() => setOpen(!open)}
            >
              {open ? "Hide" : "Show"}
              <span className="visually-hidden"> details of {a.action} at {formatDateTime(a.at, true)}</span>
            </button>
          ) : (
            <span className="muted">—</span>
          )}
        </td>
      </tr>
      {details.length > 0 && (
        <tr className={tableStyles.detailRow} id={id} hidden={!open} data-testid="action-details">
          <td colSpan={6}>
            <dl className={listStyles.list}>
              {details.map((d) => (
                <div key={d.label}>
                  <dt>{d.label}</dt>
                  <dd>
                    {isInstant(d.value) ? (
                      <time dateTime={d.value} title={d.value}>
                        {formatDateTime(d.value, true)}
                      </time>
                    ) : (
                      <pre className={listStyles.value}>{formatDetailValue(d.value)}</pre>
                    )}
                  </dd>
                </div>
              ))}
            </dl>
          </td>
        </tr>
      )}
    </>
  );
}
