"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ConfirmAction } from "@/components/ui/ConfirmAction";
import { ROLES, type Role } from "@/lib/auth/roles";
import { resetPassword, updateUser, userKeys, type ConsoleUser } from "./queries";
import type { ShowPassword } from "./UsersPage";
import tableStyles from "@/components/ui/Table.module.css";
import formStyles from "@/components/ui/forms.module.css";

/** One user's row actions: change role and reset password (local accounts), disable or enable. */
export function UserActions({ user, onPassword }: { user: ConsoleUser; onPassword: ShowPassword }) {
  const queryClient = useQueryClient();
  const invalidate = () => queryClient.invalidateQueries({ queryKey: userKeys.all });
  const update = useMutation({
    mutationFn: (body: { role?: Role; disabled?: boolean }) => updateUser(user.username, body),
    onSuccess: invalidate,
  });
  const reset = useMutation({
    mutationFn: () => resetPassword(user.username),
    onSuccess: (r) => r.password && onPassword(user.username, r.password),
  });
  const error = update.error ?? reset.error;
  return (
    <div className={tableStyles.rowActions}>
      {user.sso ? (
        // Single sign-on sets the role from the ID token at every sign-in (lib/auth/oidc.ts): a change here would not last.
        <span className="muted small">Role set by the identity provider</span>
      ) : (
        <RolePicker user={user} pending={update.isPending} onSave={(r) => update.mutate({ role: r })} />
      )}
      {user.disabled ? (
        <button
          type="button"
          className="button button--small"
          aria-label={`Enable ${user.username}`}
          onClick={() => update.mutate({ disabled: false })}
          disabled={update.isPending}
        >
          Enable
        </button>
      ) : (
        <ConfirmAction
          label="Disable"
          accessibleLabel={`Disable ${user.username}`}
          prompt={`${user.username} is signed out now and cannot sign in.`}
          confirmLabel="Disable"
          onConfirm={() => update.mutate({ disabled: true })}
          pending={update.isPending}
          danger
        />
      )}
      {!user.sso && (
        <ConfirmAction
          label="Reset password"
          accessibleLabel={`Reset password of ${user.username}`}
          prompt="Their sessions end; a new password is generated and shown once."
          confirmLabel="Reset"
          onConfirm={() => reset.mutate()}
          pending={reset.isPending}
        />
      )}
      {error && (
        <p className={formStyles.error} role="alert">
          {error.message}
        </p>
      )}
    </div>
  );
}

/** The role select; Save and Cancel appear once another role is picked. */
function RolePicker({ user, pending, onSave }: { user: ConsoleUser; pending: boolean; onSave: (role: Role) => void }) {
  const [role, setRole] = useState<string>(user.role);
  return (
    <span className={tableStyles.rowActionsGroup}>
      <select
        className="input input--small"
        aria-label={`Role of ${user.username}`}
        value={role}
        onChange={(e) => setRole(e.target.value)}
        disabled={pending}
      >
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>
      {role !== user.role && (
        <>
          <button type="button" className="button button--small button--primary" onClick={() => onSave(role as Role)} disabled={pending}>
            Save role
          </button>
          <button type="button" className="button button--small" onClick={() => setRole(user.role)}>
            Cancel
          </button>
        </>
      )}
    </span>
  );
}
