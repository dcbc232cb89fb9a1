"use client";

import { useQuery } from "@tanstack/react-query";
import { useSession } from "@/components/auth/SessionProvider";
import { EmptyState } from "@/components/ui/EmptyState";
import { QueryView } from "@/components/ui/QueryView";
import { usersQuery } from "./queries";
import { UsersTable } from "./UsersTable";
import type { ShowPassword } from "./UsersPage";

/** Loads the users and picks what to show: loading, error, or the table. */
export function UsersDataTable({ onPassword }: { onPassword: ShowPassword }) {
  const me = useSession();
  const query = useQuery(usersQuery());
  return (
    <QueryView
      query={query}
      loading="Loading users…"
      errorTitle="The users could not be loaded"
      empty={(users) =>
        users.length === 0 && (
          <EmptyState title="No users">
            <p>Create one above.</p>
          </EmptyState>
        )
      }
    >
      {(users) => <UsersTable users={users} me={me.username} onPassword={onPassword} />}
    </QueryView>
  );
}
