import { formatCount, formatDateTime } from "@/components/ui/format";
import { replayProgress } from "./progress";
import type { ReplaySummary } from "@/lib/replay/schema";
import { Table } from "@/components/ui/Table";
import Link from "next/link";
import { HealthBadge } from "./ReplayHealth";
import { OutcomeBadge } from "./OutcomeBadge";
import { describeOutcome } from "@/lib/replay/outcome";
import tableStyles from "@/components/ui/Table.module.css";
import textStyles from "@/components/ui/text.module.css";
import { clsx } from "clsx";

/** Recent replays, newest first, with their status, outcome (finished) or health (running) and counts; Open shows one's progress or results. Display only. */
export function ReplaysTable({ replays, onOpen }: { replays: ReplaySummary[]; onOpen: (id: string) => void }) {
  return (
    <Table
      caption="Replays, newest first"
      // Cells wrap (the latest error, the outcome and its note): at 1440 the table fits its card.
      wrap
      columns={[
        "Started",
        "Source",
        "Status",
        "Outcome / health",
        { label: "Settled", num: true },
        { label: "Delivered", num: true },
        { label: "Failed", num: true },
        { label: "Skipped", num: true },
        "By",
        { label: "Open", hideLabel: true },
      ]}
    >
      {replays.map((r) => {
        const { done, percent } = replayProgress(r);
        return (
          <tr key={r.id}>
            <td className={tableStyles.nowrap}>{formatDateTime(r.createdAt, true)}</td>
            <td className={textStyles.sourceName}>{r.source}</td>
            <td>
              {r.status}
              {r.forced && <span className={textStyles.badge}> forced</span>}
            </td>
            <td>
              {r.outcome ? <OutcomeBadge outcome={r.outcome} title={describeOutcome(r.outcome, r)} /> : <HealthBadge health={r.health} />}
              {!r.outcome && r.health.state !== "ok" && r.health.lastError && (
                <div className="mono small" title={r.health.lastErrorAt ?? undefined}>
                  {r.health.lastErrorAt && <>{formatDateTime(r.health.lastErrorAt, true)}: </>}
                  {r.health.lastError}
                </div>
              )}
            </td>
            <td className={tableStyles.num}>
              {formatCount(done)} / {formatCount(r.total)} <span className="muted small">({percent}%)</span>
            </td>
            <td className={clsx(tableStyles.num, r.counts.delivered === 0 && tableStyles.zero)}>{formatCount(r.counts.delivered)}</td>
            <td className={clsx(tableStyles.num, r.counts.failed === 0 && tableStyles.zero)}>{formatCount(r.counts.failed)}</td>
            <td className={clsx(tableStyles.num, r.counts.skipped_unsafe === 0 && tableStyles.zero)}>{formatCount(r.counts.skipped_unsafe)}</td>
            <td>{r.createdBy}</td>
            <td className={tableStyles.actionsCell}>
              <Link className="button button--small" prefetch={false} href={`/replays/${r.id}`} aria-label={`Link to replay of ${r.source} started ${formatDateTime(r.createdAt, true)}`}>
                Link
              </Link>{" "}
              <button
                type="button"
                className="button button--small"
                aria-label={`Open replay of ${r.source} started ${formatDateTime(r.createdAt, true)}`}
                onClick={() => onOpen(r.id)}
              >
                Open
              </button>
            </td>
          </tr>
        );
      })}
    </Table>
  );
}
