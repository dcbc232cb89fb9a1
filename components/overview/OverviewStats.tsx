import Link from "next/link";
import { StatCard, StatCardSkeleton } from "@/components/ui/StatCard";
import { Time } from "@/components/ui/Time";
import { formatBytes, formatClockTime, formatCompact, formatCount, formatPercent } from "@/components/ui/format";
import type { Overview } from "@/lib/overview/schema";
import { aliveFigure, attemptsOf, conflictsOf, expiredFigure } from "./figures";
import styles from "./overview.module.css";

const LABELS = ["Keys alive", "Claims, last hour", "Duplicates, last hour", "Conflicts, last hour", "Expired, not pruned", "Dedup table", "Dead letters pending"];

/** The headline figures across all sources. Display only. */
export function OverviewStats({ overview }: { overview: Overview }) {
  const { keys, lastHour } = overview.totals;
  const since = formatClockTime(overview.lastHourSince, false);
  const sample = overview.latestSample;
  const alive = aliveFigure(overview);
  const expired = expiredFigure(overview);
  const letters = overview.deadLetters;
  return (
    <section className={styles.stats} aria-label="Totals across all sources">
      <StatCard
        label={LABELS[0]}
        value={alive.text}
        hint={
          <>
            {alive.note && <>{alive.note} · </>}
            {formatCount(keys.inFlight)} in flight
            {keys.leaseLapsed > 0 && <> · <span className="warn-text">{formatCount(keys.leaseLapsed)} lease lapsed</span></>}
          </>
        }
        tone={keys.leaseLapsed > 0 ? "warn" : "normal"}
        title={`Keys whose expiry is still ahead: a repeat delivery of these events is caught. Counted one by one up to ${formatCount(overview.countLimit)} keys; above that, the metrics sampler's estimate. In flight: claimed with a lease, not completed yet. Lease lapsed: in flight past its lease (the worker likely died); the next delivery takes it over.`}
      />
      <StatCard
        label={LABELS[1]}
        value={formatCount(lastHour.claimed)}
        hint={`new keys since ${since}`}
        title="Claims that created a key (first delivery, reclaim after expiry, or lease takeover), summed over the minute buckets since the time shown."
      />
      <StatCard
        label={LABELS[2]}
        value={formatCount(lastHour.duplicate)}
        hint={`${formatPercent(lastHour.duplicate, attemptsOf(lastHour))} of ${formatCount(attemptsOf(lastHour))} deliveries`}
        title="Deliveries of an event whose key was alive and done: the handler was spared a second run."
      />
      <StatCard
        label={LABELS[3]}
        value={formatCount(conflictsOf(lastHour))}
        hint={
          <>
            {formatCount(lastHour.inFlight)} in flight ·{" "}
            <span className={lastHour.payloadMismatch > 0 ? "warn-text" : undefined}>
              {formatCount(lastHour.payloadMismatch)} payload mismatch
            </span>
          </>
        }
        tone={lastHour.payloadMismatch > 0 ? "warn" : "normal"}
        title="Deliveries turned away with 409: in flight = another worker held the lease; payload mismatch = same event id with a different payload hash (worth a look: a sender bug or an id collision)."
      />
      <StatCard
        label={LABELS[4]}
        value={expired.text}
        hint={expired.note ?? "no longer protecting; awaiting the pruner"}
        title="Keys past their expiry that are still stored. They no longer catch duplicates; the pruning job deletes them in batches. A figure that keeps growing means pruning is not keeping up."
      />
      <StatCard
        label={LABELS[5]}
        value={sample ? formatBytes(sample.tableBytes) : "—"}
        hint={
          sample
            ? `≈${formatCompact(sample.estimatedRows)} rows · indexes ${formatBytes(sample.indexBytes)} · at ${formatClockTime(sample.at, false)}`
            : "the first sample is taken within a minute"
        }
        title="dedup_keys on disk (table, TOAST and indexes) and its row count, alive and expired, from the metrics sampler's newest sample."
      />
      <StatCard
        label={LABELS[6]}
        value={
          letters ? (
            <Link href="/replay?status=pending" prefetch={false}>
              {formatCount(letters.pending)}
            </Link>
          ) : (
            "—"
          )
        }
        hint={
          <>
            {letters?.oldestPendingAt ? (
              <>
                oldest failed <Time iso={letters.oldestPendingAt} />
              </>
            ) : (
              "none waiting"
            )}
            {overview.replays.failing > 0 && (
              <>
                {" · "}
                <span className="warn-text">
                  {formatCount(overview.replays.failing)} replay{overview.replays.failing === 1 ? "" : "s"} failing
                </span>
              </>
            )}
          </>
        }
        tone={overview.replays.unhealthy > 0 ? "warn" : "normal"}
        title="Events a consumer gave up on that wait for a replay or a decision (Replay screen), and running replays whose deliveries keep failing."
      />
    </section>
  );
}

export function OverviewStatsSkeleton() {
  return (
    <section className={styles.stats} aria-label="Totals across all sources" aria-busy="true">
      {LABELS.map((label) => (
        <StatCardSkeleton key={label} label={label} />
      ))}
    </section>
  );
}
