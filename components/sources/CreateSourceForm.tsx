"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Panel } from "@/components/ui/Panel";
import { formatDuration } from "@/lib/sources/duration";
import { createBody, emptyForm } from "./source-form";
import { createSource, sourceKeys, type PresetItem } from "./queries";
import { SourceForm } from "./SourceForm";
import formStyles from "@/components/ui/forms.module.css";

/** A new source (admins): a name, a preset or the four parts, and optionally its dead-letter retention. */
export function CreateSourceForm({ presets }: { presets: PresetItem[] | undefined }) {
  const queryClient = useQueryClient();
  const [created, setCreated] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: createSource,
    onSuccess: async (s) => {
      setCreated(`Created ${s.name}: TTL ${formatDuration(s.ttlSeconds)}${s.preset ? ` (preset ${s.preset})` : ""}.`);
      await queryClient.invalidateQueries({ queryKey: sourceKeys.all });
    },
  });
  return (
    <Panel title="Create a source" wide>
      <SourceForm
        mode="create"
        initial={emptyForm()}
        presets={presets}
        check={createBody}
        onValid={(body, reset) => {
          setCreated(null);
          create.mutate(body, { onSuccess: reset });
        }}
        pending={create.isPending}
        serverError={create.error}
        errorTitle="The source was not created"
        submitLabel="Create source"
      />
      <p className={formStyles.status} aria-live="polite">
        {created}
      </p>
    </Panel>
  );
}
