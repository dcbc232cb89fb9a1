"use client";

import { useState } from "react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useCan } from "@/components/auth/SessionProvider";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { Status } from "@/components/ui/Status";
import { humanDuration } from "@/lib/retention/advisor";
import type { AdviceResponse } from "@/lib/retention/advice-schema";
import { formatBytes } from "@/components/ui/format";
import { presetsQuery, type SourceItem, type SourceSettings } from "./queries";
import { recommendedForm, summarizeAdvice } from "./advisor-view";
import { sourcePageKeys } from "./advisor-queries";
import { EditSource } from "./EditSource";
import styles from "./advisor.module.css";
import { clsx } from "clsx";
import textStyles from "@/components/ui/text.module.css";
import listStyles from "@/components/ui/DetailList.module.css";
import formStyles from "@/components/ui/forms.module.css";
import panelStyles from "@/components/ui/Panel.module.css";

/**
 * The advisor: what arrived against what is configured (the sender's late duplicates judged against the TTL
 * in force then, an operator's forced replays apart), the one verdict (badge and text from the server's
 * `verdict`), the recommendation with its reasons (or why there is none), both projected sizes; for admins, "Apply…" opens the ordinary edit form with the recommended
 * parts filled in (nothing is saved until they save it there, after its preview).
 */
export type AdviceState = { data?: AdviceResponse; error: unknown; isPending: boolean; isFetching: boolean; refetch: () => unknown };

export function AdvisorCard({ source, advice }: { source: SourceItem; advice: AdviceState }) {
  const canEdit = useCan("admin");
  const canExtend = useCan("operator");
  const presets = useQuery({ ...presetsQuery(), enabled: canEdit });
  const queryClient = useQueryClient();
  const [applying, setApplying] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);

  if (advice.isPending) {
    return (
      <section className={clsx(panelStyles.panel, styles.card)} aria-label="Advisor" aria-busy="true">
        <h2 className={clsx(textStyles.sectionTitle, textStyles.flush)}>Advisor</h2>
        <p className="muted">Reading the last days of duplicates…</p>
      </section>
    );
  }
  if (!advice.data) {
    return <ErrorBox title="The advice could not be loaded" error={advice.error} onRetry={() => void advice.refetch()} retrying={advice.isFetching} />;
  }
  const a = advice.data;
  const s = summarizeAdvice(a);
  const done = async (settings?: SourceSettings) => {
    setApplying(false);
    if (settings) {
      setSaved(`Saved: TTL ${humanDuration(settings.ttlSeconds)} for new claims; live keys keep their expiry.`);
      await queryClient.invalidateQueries({ queryKey: sourcePageKeys.all(source.name) });
    }
  };
  return (
    <section className={clsx(panelStyles.panel, styles.card, s.tone === "warn" ? styles.cardWarn : s.tone === "ok" && styles.cardOk)} aria-label="Advisor" data-testid="advisor-card">
      <header className={styles.header}>
        <h2 className={clsx(textStyles.sectionTitle, textStyles.flush)}>Advisor</h2>
        <Status tone={s.tone === "neutral" ? "off" : s.tone} data-testid="advisor-badge">
          {s.badge}
        </Status>
        {advice.isFetching && <span className="muted small">updating…</span>}
      </header>
      <dl className={listStyles.list}>
        <div>
          <dt>Observed</dt>
          <dd>
            {s.observed}
            {s.late && <div className={s.tone === "ok" ? "muted" : "warn-text"}>{s.late}</div>}
            {s.replays && (
              <div className="muted" data-testid="advisor-replays">
                {s.replays}
              </div>
            )}
          </dd>
        </div>
        <div>
          <dt>Configured</dt>
          <dd>
            <span className="mono">{s.current}</span>
            <div className="muted small">projected {formatBytes(a.projection.currentBytes)} of keys at the last hour&apos;s claim rate</div>
          </dd>
        </div>
        <div>
          <dt>Recommendation</dt>
          <dd>
            <strong data-testid="advisor-verdict">{s.verdict}</strong>
            {a.recommended && a.projection.recommendedBytes !== null && s.changes && (
              <div className="muted small">
                projected {formatBytes(a.projection.recommendedBytes)} (now {formatBytes(a.projection.currentBytes)})
              </div>
            )}
          </dd>
        </div>
      </dl>
      {a.recommended && (
        <ul className={styles.reasons} aria-label="Reasons">
          {a.recommended.reasons.map((r) => (
            <li key={r}>{r}</li>
          ))}
        </ul>
      )}
      <p className={formStyles.status} aria-live="polite">
        {saved}
      </p>
      {canEdit && a.recommended && s.changes && !applying && (
        <div className={formStyles.actions}>
          <button type="button" className="button button--primary" onClick={() => {
              setSaved(null);
              setApplying(true);
            }}>
            Apply…
          </button>
          <span className="muted small">opens the edit form with these values; nothing changes until you save</span>
        </div>
      )}
      {applying && a.recommended && (
        <EditSource
          source={source}
          presets={presets.data}
          canExtend={canExtend}
          initial={recommendedForm(source, a.recommended.parts)}
          onDone={(settings) => void done(settings)}
        />
      )}
    </section>
  );
}
