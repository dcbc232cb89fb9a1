"use client";

import { useQuery } from "@tanstack/react-query";
import { useSession } from "@/components/auth/SessionProvider";
import { EmptyState } from "@/components/ui/EmptyState";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { usersQuery } from "./queries";
import { UsersTable } from "./UsersTable";
import type { ShowPassword } from "./UsersPage";

/** Loads the users and picks what to show: loading, error, or the table. */
export function UsersDataTable({ onPassword }: { onPassword: ShowPassword }) {
  const me = useSession();
  const { data, error, isPending, isFetching, refetch } = useQuery(usersQuery());
  if (isPending) {
    return (
      <p className="muted" aria-busy="true">
        Loading users…
      </p>
    );
  }
  if (!data) {
    return <ErrorBox title="The users could not be loaded" error={error} onRetry={() => void refetch()} retrying={isFetching} />;
  }
  if (data.length === 0) {
    return (
      <EmptyState title="No users">
        <p>Create one above.</p>
      </EmptyState>
    );
  }
  return <UsersTable users={data} me={me.username} onPassword={onPassword} />;
}
