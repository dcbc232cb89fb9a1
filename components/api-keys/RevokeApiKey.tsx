"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ConfirmAction } from "@/components/ui/ConfirmAction";
import { apiKeyKeys, revokeApiKey, type ApiKeyItem } from "./queries";
import tableStyles from "@/components/ui/Table.module.css";
import formStyles from "@/components/ui/forms.module.css";

/** Revoke with a confirmation: the key is refused from the next request on, and that cannot be undone. */
export function RevokeApiKey({ apiKey }: { apiKey: ApiKeyItem }) {
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => revokeApiKey(apiKey.id),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: apiKeyKeys.all }),
  });
  return (
    <div className={tableStyles.rowActions}>
      <ConfirmAction
        label="Revoke"
        accessibleLabel={`Revoke ${apiKey.name}`}
        prompt="Services using it are refused at once. This cannot be undone."
        confirmLabel="Revoke key"
        onConfirm={() => revoke.mutate()}
        pending={revoke.isPending}
        danger
      />
      {revoke.isError && (
        <p className={formStyles.error} role="alert">
          {revoke.error.message}
        </p>
      )}
    </div>
  );
}
