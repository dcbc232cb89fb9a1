"use client";

import { useId, useState } from "react";
import { keyOfTarget } from "@/components/audit/prepare";
import { EventLink } from "@/components/ui/EventLink";
import { formatDateTime } from "@/components/ui/format";
import { detailEntries, formatDetailValue } from "./prepare";
import type { ActionRecord } from "./queries";

const OUTCOME_CLASS: Record<string, string> = { ok: "status--ok", refused: "status--warn", failed: "status--error" };

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
          <time dateTime={a.at} title={a.at}>
            {formatDateTime(a.at, true)}
          </time>
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
          <span className={`status ${OUTCOME_CLASS[a.outcome] ?? ""}`}>{a.outcome}</span>
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
        <tr className="detail-row" id={id} hidden={!open}>
          <td colSpan={6}>
            <dl className="detail-list">
              {details.map((d) => (
                <div key={d.label} className="detail-list__item">
                  <dt>{d.label}</dt>
                  <dd>
                    <pre className="detail-list__value">{formatDetailValue(d.value)}</pre>
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
