import Link from "next/link";
import { formatDateTime, isInstant } from "@/components/ui/format";
import { isKnownKind, kindLabel } from "./view";
import type { AuditRow } from "./queries";
import styles from "./audit.module.css";
import listStyles from "@/components/ui/DetailList.module.css";
import { Status, type Tone } from "@/components/ui/Status";

const KIND_TONE: Record<string, Tone> = {
  claimed: "ok",
  reclaimed_after_expiry: "ok",
  completed: "ok",
  lease_takeover: "warn",
  released: "warn",
  dead_lettered: "error",
};

/** An event's audit rows, oldest first (`lateIds`: the late duplicates' claims, marked), each with its actor and recorded detail. Kinds this console does not know are shown as stored. */
export function EventTimeline({ rows, lateIds }: { rows: AuditRow[]; lateIds?: ReadonlySet<string> }) {
  return (
    <ol className={styles.timeline} aria-label="Audit timeline, oldest first">
      {rows.map((r) => (
        <li key={r.id} className={styles.timelineItem}>
          <div className={styles.timelineHead}>
            <time dateTime={r.at} title={r.at}>
              {formatDateTime(r.at, true)}
            </time>{" "}
            <Status tone={KIND_TONE[r.kind]} title={r.kind}>
              {kindLabel(r.kind)}
            </Status>
            {!isKnownKind(r.kind) && <span className="muted small"> (a kind this console does not describe yet)</span>}
            {lateIds?.has(r.id) && (
              <>
                {" "}
                <Status tone="warn" title="Claimed again after its key had expired: processed a second time">
                  late duplicate
                </Status>
              </>
            )}
            {r.actor && (
              <span className="muted">
                {" "}
                by <span className="mono">{r.actor}</span>
              </span>
            )}
          </div>
          {r.detail && Object.keys(r.detail).length > 0 && (
            <dl className={listStyles.list}>
              {Object.entries(r.detail).map(([k, v]) => (
                <div key={k}>
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

/** One detail value; a replay or dead-letter id links to its page; an instant reads like every other time. */
function DetailValue({ name, value }: { name: string; value: unknown }) {
  if (isInstant(value)) {
    return (
      <time dateTime={value} title={value}>
        {formatDateTime(value, true)}
      </time>
    );
  }
  const link = LINKED[name];
  if (link && typeof value === "string" && UUID.test(value)) {
    return (
      <Link className="mono" prefetch={false} href={link(value)}>
        {value}
      </Link>
    );
  }
  return <pre className={listStyles.value}>{typeof value === "string" ? value : JSON.stringify(value, null, 2)}</pre>;
}
