"use client";

import Link from "next/link";
import { CircleCheck, TriangleAlert } from "lucide-react";
import { Icon } from "@/components/ui/Icon";
import { useState } from "react";
import { formatDateTime } from "@/components/ui/format";
import { Panel } from "@/components/ui/Panel";
import { formatDuration } from "@/lib/sources/duration";
import { describeProjection, invariantTitle, summarizeInvariants, ttlEquation } from "./describe";
import type { PresetItem, SourceItem, SourceSettings } from "./queries";
import { EditSource } from "./EditSource";
import { ExtendLiveKeys } from "./ExtendLiveKeys";
import { ReplayTarget } from "./ReplayTarget";
import styles from "./sources.module.css";
import { InletsPanel } from "./InletsPanel";
import formStyles from "@/components/ui/forms.module.css";
import textStyles from "@/components/ui/text.module.css";
import listStyles from "@/components/ui/DetailList.module.css";
import { clsx } from "clsx";
import { Status } from "@/components/ui/Status";

/**
 * One source: how its TTL is made up, its preset, dead-letter retention, projected size and invariant
 * checks (flagged when one fails), replay destination and signing secret; Edit (and the replay settings)
 * for admins, Extend live keys for operators.
 */
export function SourceCard({
  source,
  presets,
  canEdit,
  canExtend,
}: {
  source: SourceItem;
  presets: PresetItem[] | undefined;
  canEdit: boolean;
  canExtend: boolean;
}) {
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  const checks = summarizeInvariants(source.invariants);
  const flagged = checks.failing.length > 0;
  const done = (s?: SourceSettings) => {
    setEditing(false);
    if (s) setSaved(`Saved: TTL ${formatDuration(s.ttlSeconds)} for new claims; live keys keep their expiry.`);
  };
  return (
    <Panel
      as="article"
      className={flagged ? `${styles.card} ${styles.flagged}` : styles.card}
      data-flagged={flagged || undefined}
      title={
        <Link href={`/sources/${encodeURIComponent(source.name)}`} title={`${source.name}: advisor, duplicate ages, late duplicates, charts`}>
          {source.name}
        </Link>
      }
      level={3}
      titleClassName={clsx(textStyles.sourceName, styles.title)}
      titleId={`source-${source.name}-title`}
      badge={
        <Status tone={flagged ? "warn" : "ok"}>{checks.label}</Status>
      }
      actions={
        <>
          {canEdit && !editing && (
            <button
              type="button"
              className="button button--small"
              aria-label={`Edit ${source.name}`}
              onClick={() => {
                setSaved(null);
                setEditing(true);
              }}
            >
              Edit
            </button>
          )}
          {canExtend && <ExtendLiveKeys source={source} />}
        </>
      }
    >
      <p className={formStyles.status} aria-live="polite">
        {saved}
      </p>
      {editing ? (
        <EditSource source={source} presets={presets} canExtend={canExtend} onDone={done} />
      ) : (
        <SourceFacts source={source} preset={presets?.find((p) => p.name === source.preset)} />
      )}
      <ReplayTarget source={source} canEdit={canEdit} />
      {canEdit && <InletsPanel source={source.name} />}
      <h4 className={textStyles.subtitle}>Checks</h4>
      <ul className={styles.checks}>
        {source.invariants.map((i) => (
          <li key={i.id} className={`${styles.check} ${i.ok ? styles.checkOk : styles.checkWarn}`} data-check={i.ok ? "ok" : "warn"}>
            <span className={styles.checkMark} role="img" aria-label={i.ok ? "ok" : "warning"}>
              <Icon icon={i.ok ? CircleCheck : TriangleAlert} size="sm" />
            </span>
            <span>
              <strong>{invariantTitle(i.id)}</strong>: {i.message}
            </span>
          </li>
        ))}
      </ul>
    </Panel>
  );
}

/** The settings and the projection as a definition list. Display only. */
function SourceFacts({ source, preset }: { source: SourceItem; preset: PresetItem | undefined }) {
  const projection = describeProjection(source.projection, source.ttlSeconds);
  return (
    <dl className={listStyles.list}>
      <div>
        <dt>Key TTL</dt>
        <dd>
          <span className="mono" title="retry window + queue lag + clock skew + replay margin">
            {ttlEquation(source)}
          </span>
          <div className="muted small">retry window + queue lag + clock skew + replay</div>
        </dd>
      </div>
      <div>
        <dt>Preset</dt>
        <dd>
          {!source.preset ? (
            <span className="muted">Custom parts</span>
          ) : preset ? (
            <details className={styles.presetCite}>
              <summary title={`${preset.label}. Source: ${preset.source}`}>
                <code>{preset.name}</code> {preset.label}
              </summary>
              <p className="small">Assumes {preset.assumes}.</p>
              <p className="small muted">Source: {preset.source}</p>
            </details>
          ) : (
            <code>{source.preset}</code>
          )}
        </dd>
      </div>
      <div>
        <dt>Dead-letter retention</dt>
        <dd>
          {source.deadLetterRetentionSeconds === null ? (
            <span className="muted">Not set</span>
          ) : (
            formatDuration(source.deadLetterRetentionSeconds)
          )}
        </dd>
      </div>
      <div>
        <dt>Projected steady state</dt>
        <dd>
          <strong>{projection.result}</strong>
          <div className="muted small" title="recent claim rate (last hour) × TTL × bytes per key">
            {projection.formula}
          </div>
          <div className="muted small">{projection.basis}</div>
        </dd>
      </div>
      <div>
        <dt>Audit history kept</dt>
        <dd>{formatDuration(source.auditRetentionSeconds)}</dd>
      </div>
      <div>
        <dt>Changed</dt>
        <dd>
          <time dateTime={source.updatedAt}>{formatDateTime(source.updatedAt)}</time>
          <span className="muted small"> (created {formatDateTime(source.createdAt)})</span>
        </dd>
      </div>
    </dl>
  );
}
