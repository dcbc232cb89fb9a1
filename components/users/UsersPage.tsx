"use client";

import { useState } from "react";
import { PageHeader } from "@/components/ui/PageHeader";
import { SecretPanel } from "@/components/ui/SecretPanel";
import { CreateUserForm } from "./CreateUserForm";
import { UsersDataTable } from "./UsersDataTable";
import textStyles from "@/components/ui/text.module.css";

/** A generated password to show once: after creating a user or resetting one's password. */
export type ShowPassword = (username: string, password: string) => void;

export function UsersPage() {
  const [shown, setShown] = useState<{ username: string; password: string } | null>(null);
  const show: ShowPassword = (username, password) => setShown({ username, password });
  return (
    <>
      <PageHeader
        title="Users"
        description="Who may sign in to the console, and what their role lets them do. Changing a user's role, disabling them or resetting their password ends their sessions at once."
      />
      {shown && (
        <SecretPanel title={`Password for ${shown.username}`} secret={shown.password} stored="hash" onDismiss={() => setShown(null)}>
          <p>Give it to {shown.username} over a private channel; they sign in with it at /sign-in.</p>
        </SecretPanel>
      )}
      <CreateUserForm onPassword={show} />
      <h2 className={textStyles.sectionTitle}>All users</h2>
      <UsersDataTable onPassword={show} />
    </>
  );
}
