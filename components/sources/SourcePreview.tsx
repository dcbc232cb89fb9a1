"use client";

import { CircleCheck, TriangleAlert } from "lucide-react";
import { Icon } from "@/components/ui/Icon";
import { useDebounced } from "@/components/ui/useDebounced";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { ApiError } from "@/components/api";
import { formatDuration } from "@/lib/sources/duration";
import { describeProjection, invariantTitle, ttlEquation } from "./describe";
import { previewBody, type SourceFormState } from "./source-form";
import type { SourceItem } from "./queries";
import { previewSource } from "./advisor-queries";
import styles from "./advisor.module.css";
import cards from "./sources.module.css";
import formStyles from "@/components/ui/forms.module.css";

/**
 * The edit preview: while an admin types, the server checks the typed parts as it would check the saved
 * source (POST …/preview: the same invariant checks and size projection) and this shows the result before
 * anything is saved. Typing that does not parse yet shows nothing new (the form names the field).
 */
export function SourcePreview({ source, state }: { source: SourceItem; state: SourceFormState }) {
  const body = previewBody(state);
  const key = useDebounced(body ? JSON.stringify(body) : null, 300);
  const preview = useQuery({
    queryKey: ["source-preview", source.name, key],
    queryFn: ({ signal }) => previewSource(source.name, JSON.parse(key!), signal),
    enabled: key !== null,
    placeholderData: keepPreviousData,
    retry: false,
    staleTime: 30_000,
  });
  const p = preview.data?.preview;
  const refused = preview.error instanceof ApiError && preview.error.status === 422 ? preview.error.message : null;
  return (
    <section className={styles.preview} aria-label="Preview before saving" aria-live="polite" aria-busy={preview.isFetching} data-testid="source-preview">
      <h4 className={styles.subtitle}>Before you save {preview.isFetching && <span className="muted small">checking…</span>}</h4>
      {refused ? (
        <p className={formStyles.error}>{refused}</p>
      ) : preview.isError ? (
        <p className="muted">The preview is unavailable right now; saving still checks everything.</p>
      ) : !p ? (
        <p className="muted">{key === null ? "Type the four parts to see the checks and the projected size." : "Checking…"}</p>
      ) : (
        <>
          <p>
            TTL <span className="mono">{ttlEquation(p)}</span>
            {p.ttlSeconds !== source.ttlSeconds && <span className="muted"> (now {formatDuration(source.ttlSeconds)})</span>}
          </p>
          <p data-testid="preview-projection">
            Projected {describeProjection(p.projection, p.ttlSeconds).result}
            {p.projection.bytes !== source.projection.bytes && (
              <span className="muted"> (now {describeProjection(source.projection, source.ttlSeconds).result.replace(/^≈ /, "")})</span>
            )}
          </p>
          <ul className={cards.checks}>
            {p.invariants.map((i) => (
              <li key={i.id} className={`${cards.check} ${i.ok ? cards.checkOk : cards.checkWarn}`} data-check={i.ok ? "ok" : "warn"}>
                <span className={cards.checkMark} role="img" aria-label={i.ok ? "ok" : "warning"}>
                  <Icon icon={i.ok ? CircleCheck : TriangleAlert} size="sm" />
                </span>
                <span>
                  <strong>{invariantTitle(i.id)}</strong>: {i.message}
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
