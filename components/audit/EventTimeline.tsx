import Link from "next/link";
import { formatDateTime } from "@/components/ui/format";
import { isKnownKind, kindLabel } from "./prepare";
import type { AuditRow } from "./queries";
import styles from "./audit.module.css";

const KIND_CLASS: Record<string, string> = {
  claimed: "status--ok",
  reclaimed_after_expiry: "status--ok",
  completed: "status--ok",
  lease_takeover: "status--warn",
  released: "status--warn",
  dead_lettered: "status--error",
};

/** An event's audit rows, oldest first, each with its actor and recorded detail. Kinds this console does not know are shown as stored. */
export function EventTimeline({ rows }: { rows: AuditRow[] }) {
  return (
    <ol className={styles.timeline} aria-label="Audit timeline, oldest first">
      {rows.map((r) => (
        <li key={r.id} className={styles.timelineItem}>
          <div className={styles.timelineHead}>
            <time dateTime={r.at} title={r.at}>
              {formatDateTime(r.at, true)}
            </time>{" "}
            <span className={`status ${KIND_CLASS[r.kind] ?? ""}`} title={r.kind}>
              {kindLabel(r.kind)}
            </span>
            {!isKnownKind(r.kind) && <span className="muted small"> (a kind this console does not describe yet)</span>}
            {r.actor && (
              <span className="muted">
                {" "}
                by <span className="mono">{r.actor}</span>
              </span>
            )}
          </div>
          {r.detail && Object.keys(r.detail).length > 0 && (
            <dl className="detail-list">
              {Object.entries(r.detail).map(([k, v]) => (
                <div key={k} className="detail-list__item">
                  <dt>{k}</dt>
                  <dd>
                    <DetailValue name={k} value={v} />
                  </dd>
                </div>
              ))}
            </dl>
          )}
        </li>
      ))}
    </ol>
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Detail fields that name a page of their own: a replay, a dead letter. */
const LINKED: Record<string, (id: string) => string> = { replayId: (id) => `/replays/${id}`, deadLetterId: (id) => `/dead-letters/${id}` };

/** One detail value; a replay or dead-letter id links to its page. */
function DetailValue({ name, value }: { name: string; value: unknown }) {
  const link = LINKED[name];
  if (link && typeof value === "string" && UUID.test(value)) {
    return (
      <Link className="mono" prefetch={false} href={link(value)}>
        {value}
      </Link>
    );
  }
  return <pre className="detail-list__value">{typeof value === "string" ? value : JSON.stringify(value, null, 2)}</pre>;
}
