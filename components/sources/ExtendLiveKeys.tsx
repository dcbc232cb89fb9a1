"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmAction } from "@/components/ui/ConfirmAction";
import { formatCount } from "@/components/ui/format";
import { formatDuration } from "@/lib/sources/duration";
import { extendLiveKeys, sourceKeys, type SourceItem } from "./queries";
import tableStyles from "@/components/ui/Table.module.css";
import formStyles from "@/components/ui/forms.module.css";

/**
 * "Extend live keys to the current TTL" (operators), confirmed first, then how many were extended. There
 * is no way to shorten keys here: the server only ever moves an expiry later.
 */
export function ExtendLiveKeys({ source }: { source: SourceItem }) {
  const queryClient = useQueryClient();
  const extend = useMutation({
    mutationFn: () => extendLiveKeys(source.name),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: sourceKeys.all }),
  });
  const ttl = formatDuration(source.ttlSeconds);
  return (
    <div className={tableStyles.rowActions}>
      <ConfirmAction
        label="Extend live keys"
        accessibleLabel={`Extend live keys of ${source.name}`}
        prompt={
          <>
            Every live key of {source.name} will expire {ttl} after its claim, if that is later than now set. It never
            shortens a key, leaves expired keys alone, and is recorded in the action log.
          </>
        }
        confirmLabel={`Extend to ${ttl}`}
        onConfirm={() => extend.mutate()}
        pending={extend.isPending}
      />
      <span className={formStyles.status} aria-live="polite">
        {extend.isPending
          ? "Extending…"
          : extend.data &&
            `Extended ${formatCount(extend.data.extended)} live key${extend.data.extended === 1 ? "" : "s"} to the ${formatDuration(extend.data.ttlSeconds)} TTL.`}
      </span>
      {extend.isError && (
        <p className={formStyles.error} role="alert">
          {extend.error.message}
        </p>
      )}
    </div>
  );
}
