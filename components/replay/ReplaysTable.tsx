import { formatCount, formatDateTime } from "@/components/ui/format";
import { replayProgress } from "./prepare";
import type { ReplaySummary } from "@/lib/replay/schema";
import { Table } from "@/components/ui/Table";
import Link from "next/link";
import { HealthBadge } from "./ReplayHealth";

/** Recent replays, newest first, with their state and counts; Open shows one's progress or results. Display only. */
export function ReplaysTable({ replays, onOpen }: { replays: ReplaySummary[]; onOpen: (id: string) => void }) {
  return (
    <Table
      caption="Replays, newest first"
      columns={[
        "Started",
        "Source",
        "Status",
        "Health",
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
            <td className="nowrap">{formatDateTime(r.createdAt, true)}</td>
            <td className="source-name">{r.source}</td>
            <td>
              {r.status}
              {r.forced && <span className="badge"> forced</span>}
            </td>
            <td>
              <HealthBadge health={r.health} />
              {r.health.state !== "ok" && r.health.lastError && (
                <div className="mono small" title={r.health.lastErrorAt ?? undefined}>
                  {r.health.lastErrorAt && <>{formatDateTime(r.health.lastErrorAt, true)}: </>}
                  {r.health.lastError}
                </div>
              )}
            </td>
            <td className="num">
              {formatCount(done)} / {formatCount(r.total)} <span className="muted small">({percent}%)</span>
            </td>
            <td className={`num${r.counts.delivered === 0 ? " zero" : ""}`}>{formatCount(r.counts.delivered)}</td>
            <td className={`num${r.counts.failed === 0 ? " zero" : ""}`}>{formatCount(r.counts.failed)}</td>
            <td className={`num${r.counts.skipped_unsafe === 0 ? " zero" : ""}`}>{formatCount(r.counts.skipped_unsafe)}</td>
            <td>{r.createdBy}</td>
            <td className="actions-cell">
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
