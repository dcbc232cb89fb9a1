"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { formatDuration } from "@/lib/sources/duration";
import { formFromSource, updateBody, type SourceFormState } from "./source-form";
import { sourceKeys, updateSource, type PresetItem, type SourceItem, type SourceSettings } from "./queries";
import { SourceForm } from "./SourceForm";
import styles from "./sources.module.css";
import { SourcePreview } from "./SourcePreview";
import textStyles from "@/components/ui/text.module.css";

/**
 * The edit form of one source (admins), prefilled (from the source, or `initial`: the advisor's
 * recommendation), with a live preview of the checks and size; a change applies to new claims only.
 */
export function EditSource({
  source,
  presets,
  canExtend,
  initial,
  onDone,
}: {
  source: SourceItem;
  presets: PresetItem[] | undefined;
  canExtend: boolean;
  initial?: SourceFormState;
  /** Called with the saved source, or without one on cancel. */
  onDone: (saved?: SourceSettings) => void;
}) {
  const queryClient = useQueryClient();
  const update = useMutation({
    mutationFn: (body: Parameters<typeof updateSource>[1]) => updateSource(source.name, body),
    onSuccess: async (saved) => {
      await queryClient.invalidateQueries({ queryKey: sourceKeys.all });
      onDone(saved);
    },
  });
  return (
    <section className={styles.edit} aria-label={`Edit ${source.name}`}>
      <SourceForm
        mode="edit"
        initial={initial ?? formFromSource(source)}
        presets={presets}
        check={(state) => updateBody(state, source)}
        onValid={(body) => update.mutate(body)}
        pending={update.isPending}
        serverError={update.error}
        errorTitle={`${source.name} was not changed`}
        submitLabel="Save changes"
        onCancel={() => onDone()}
        preview={(state) => <SourcePreview source={source} state={state} />}
      >
        <p className={textStyles.note}>
          The new TTL applies to new claims; live keys keep their expiry (now up to {formatDuration(source.ttlSeconds)} from their
          claim).
          {canExtend && " To give them the new TTL, use “Extend live keys” afterwards."}
        </p>
      </SourceForm>
    </section>
  );
}
