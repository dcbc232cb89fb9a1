"use client";

import { Plus } from "lucide-react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { Panel } from "@/components/ui/Panel";
import { TextField } from "@/components/ui/TextField";
import { useHydrated } from "@/components/ui/useHydrated";
import { SCOPE_HELP } from "@/lib/auth/roles";
import { SCOPES, type Scope } from "@/lib/auth/schema";
import { apiKeyKeys, createApiKey } from "./queries";
import { clsx } from "clsx";
import formStyles from "@/components/ui/forms.module.css";
import { Icon } from "@/components/ui/Icon";

/** A new key: a name and at least one scope. The key itself goes to `onCreated`, once. */
export function CreateApiKeyForm({ onCreated }: { onCreated: (name: string, key: string) => void }) {
  const hydrated = useHydrated();
  const queryClient = useQueryClient();
  const [noScope, setNoScope] = useState(false);
  const create = useMutation({
    mutationFn: createApiKey,
    onSuccess: async ({ name, key }) => {
      onCreated(name, key);
      await queryClient.invalidateQueries({ queryKey: apiKeyKeys.all });
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const formEl = e.currentTarget;
    const form = new FormData(formEl);
    const scopes = form.getAll("scopes").map(String) as Scope[];
    setNoScope(scopes.length === 0);
    if (scopes.length === 0) return;
    create.mutate({ name: String(form.get("name") ?? "").trim(), scopes }, { onSuccess: () => formEl.reset() });
  };
  return (
    <Panel title="Create an API key" wide>
      {create.isError && <ErrorBox title="The key was not created" error={create.error} />}
      <form className={formStyles.form} method="post" onSubmit={submit}>
        <TextField
          id="new-key-name"
          label="Name"
          hint={
            <>
              Say which service uses it; it shows in the action log as <code>apikey:&lt;name&gt;</code>.
            </>
          }
          inputClassName="input--wide"
          name="name"
          required
          maxLength={64}
          pattern="[A-Za-z0-9][A-Za-z0-9 ._\-]{0,63}"
          title="1-64 letters, digits, space, '.', '_' or '-'"
          autoComplete="off"
          placeholder="billing-webhooks"
        />
        <fieldset className={clsx(formStyles.field, formStyles.fieldset)} aria-describedby={noScope ? "new-key-scope-error" : undefined}>
          <legend className={formStyles.label}>Scopes</legend>
          {SCOPES.map((s) => (
            <label key={s} className={formStyles.check}>
              <input type="checkbox" name="scopes" value={s} defaultChecked={s === "claims:write"} />
              <span className={formStyles.checkText}>
                <code>{s}</code> <span className={clsx("muted", formStyles.checkHelp)}>{SCOPE_HELP[s]}</span>
              </span>
            </label>
          ))}
          {noScope && (
            <p className={formStyles.error} id="new-key-scope-error" role="alert">
              Choose at least one scope.
            </p>
          )}
        </fieldset>
        <div className={formStyles.actions}>
          <button type="submit" className="button button--primary" disabled={!hydrated || create.isPending}>
            <Icon icon={Plus} />
            {create.isPending ? "Creating…" : "Create API key"}
          </button>
        </div>
      </form>
    </Panel>
  );
}
