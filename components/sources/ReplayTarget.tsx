"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { Save } from "lucide-react";
import { useState, type FormEvent } from "react";
import { ConfirmAction } from "@/components/ui/ConfirmAction";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { Icon } from "@/components/ui/Icon";
import { formatDateTime } from "@/components/ui/format";
import { SecretPanel } from "@/components/ui/SecretPanel";
import { TextField } from "@/components/ui/TextField";
import { useNow } from "@/components/replay/useNow";
import { parseReplayDestination, signingGrace } from "./replay-destination";
import { rotateSigningSecret, setReplayDestination, sourceKeys, type SourceItem } from "./queries";
import { clsx } from "clsx";
import textStyles from "@/components/ui/text.module.css";
import listStyles from "@/components/ui/DetailList.module.css";
import formStyles from "@/components/ui/forms.module.css";
import tableStyles from "@/components/ui/Table.module.css";

/**
 * Where a source's replays go and whether they are signed: the destination URL and when the signing
 * secret was set, for everyone; editing the destination and generating / rotating the secret (shown
 * once) for admins.
 */
export function ReplayTarget({ source, canEdit }: { source: SourceItem; canEdit: boolean }) {
  const queryClient = useQueryClient();
  const now = useNow(30_000);
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState("");
  const [invalid, setInvalid] = useState<string | null>(null);
  const [secret, setSecret] = useState<{ value: string; graceUntil: string | null } | null>(null);
  const save = useMutation({
    mutationFn: (value: string | null) => setReplayDestination(source.name, value),
    onSuccess: async () => {
      setEditing(false);
      await queryClient.invalidateQueries({ queryKey: sourceKeys.all });
    },
  });
  const rotate = useMutation({
    mutationFn: () => rotateSigningSecret(source.name),
    onSuccess: async (r) => {
      setSecret({ value: r.secret, graceUntil: r.graceUntil });
      await queryClient.invalidateQueries({ queryKey: sourceKeys.all });
    },
  });
  const destination = source.replayDestination ?? null;
  const setAt = source.signingSecretSetAt ?? null;
  const grace = signingGrace(source.signingSecretGraceUntil ?? null, now);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const r = parseReplayDestination(text);
    if (!r.ok) return setInvalid(r.error);
    setInvalid(null);
    save.mutate(r.value);
  };
  const inputId = `replay-destination-${source.name}`;
  return (
    // The anchor a replay's readiness checks link to (lib/replay/readiness.ts sourceSettingsHref).
    <div id={`replay-target-${source.name}`}>
      <h4 className={textStyles.subtitle}>Replay</h4>
      <dl className={listStyles.list}>
        <div>
          <dt>Replay destination</dt>
          <dd>{destination ? <span className="mono">{destination}</span> : <span className="muted">Not set: replays cannot start</span>}</dd>
        </div>
        <div>
          <dt>Signing secret</dt>
          <dd>
            {setAt ? (
              <>
                Set <time dateTime={setAt}>{formatDateTime(setAt)}</time>
              </>
            ) : (
              <span className="muted">Not set</span>
            )}
          </dd>
        </div>
        {grace && (
          <div>
            <dt>Rotation grace period</dt>
            <dd data-testid="signing-grace">
              {grace.active ? (
                <span className="warn-text">
                  The previous secret also signs replays until <time dateTime={grace.until}>{formatDateTime(grace.until)}</time>: switch the
                  destination to the new one before then
                </span>
              ) : (
                <span className="muted">
                  Ended <time dateTime={grace.until}>{formatDateTime(grace.until)}</time>: only the current secret signs
                </span>
              )}
            </dd>
          </div>
        )}
      </dl>
      {canEdit && editing && (
        <form className={clsx(formStyles.form, formStyles.row)} onSubmit={submit} noValidate aria-label={`Set the replay destination of ${source.name}`}>
          <TextField
            id={inputId}
            label={`Replay destination of ${source.name}`}
            hint="Replays POST each event here, signed (Standard Webhooks). Empty clears it."
            wideHint
            error={invalid ?? undefined}
            inputClassName="input--wide"
            type="url"
            value={text}
            onChange={(e) => setText(e.target.value)}
            placeholder="https://billing.internal/webhooks/replay"
            autoComplete="off"
            spellCheck={false}
          />
          <div className={formStyles.actions}>
            <button type="submit" className="button button--primary" disabled={save.isPending}>
              <Icon icon={Save} />
              {save.isPending ? "Saving…" : "Save destination"}
            </button>
            <button type="button" className="button" onClick={() => setEditing(false)} disabled={save.isPending}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {save.isError && <ErrorBox title="The destination was not saved" error={save.error} />}
      {canEdit && (
        <div className={tableStyles.rowActions}>
          {!editing && (
            <button
              type="button"
              className="button button--small"
              onClick={() => {
                setText(destination ?? "");
                setInvalid(null);
                save.reset();
                setEditing(true);
              }}
            >
              {destination ? "Change destination" : "Set destination"}
              <span className="visually-hidden"> of {source.name}</span>
            </button>
          )}
          <ConfirmAction
            label={setAt ? "Rotate signing secret" : "Generate signing secret"}
            accessibleLabel={`${setAt ? "Rotate" : "Generate"} signing secret of ${source.name}`}
            prompt={
              setAt
                ? "Replays are then signed with both the current and the new secret for a grace period (24 hours unless configured otherwise), so the destination can switch to the new secret meanwhile; after it, only the new one signs."
                : "A new secret signs every replay of this source; it is shown once."
            }
            confirmLabel={setAt ? "Rotate now" : "Generate"}
            onConfirm={() => rotate.mutate()}
            pending={rotate.isPending}
            danger={Boolean(setAt)}
          />
        </div>
      )}
      {rotate.isError && <ErrorBox title="The signing secret was not generated" error={rotate.error} />}
      {secret && (
        <SecretPanel title={`Signing secret of ${source.name}`} secret={secret.value} stored="encrypted" onDismiss={() => setSecret(null)}>
          <p className="small">
            Give it to the destination: it verifies each replay&apos;s <code>webhook-signature</code> header with it (Standard
            Webhooks, HMAC-SHA256).
          </p>
          {secret.graceUntil && (
            <p className="small">
              The previous secret keeps signing replays next to this one until{" "}
              <time dateTime={secret.graceUntil}>{formatDateTime(secret.graceUntil)}</time>.
            </p>
          )}
        </SecretPanel>
      )}
    </div>
  );
}
