"use client";

import { useMutation } from "@tanstack/react-query";
import { api, isSessionEnded } from "@/components/api";
import { RoleBadge } from "@/components/ui/RoleBadge";
import { useSession } from "./SessionProvider";
import styles from "./auth.module.css";

/** Who is signed in, and signing out. A full page load follows, so nothing of this session stays in memory. */
export function UserMenu() {
  const user = useSession();
  const signOut = useMutation({
    mutationFn: () => api("/api/v1/session", { method: "DELETE" }),
    onSuccess: () => window.location.assign("/sign-in"),
    // A session that has already ended (401) is as good as signed out.
    onError: (err) => isSessionEnded(err) && window.location.assign("/sign-in"),
  });
  return (
    <div className={styles.userMenu}>
      <span className={styles.userName} title={user.name !== user.username ? user.name : undefined}>
        <span className="visually-hidden">Signed in as </span>
        {user.username}
      </span>
      <RoleBadge role={user.role} />
      <button type="button" className="button button--small" onClick={() => signOut.mutate()} disabled={signOut.isPending}>
        {signOut.isPending ? "Signing out…" : "Sign out"}
      </button>
      {signOut.isError && !isSessionEnded(signOut.error) && (
        <span className="inline-error" role="alert">
          Sign-out failed: {signOut.error.message}
        </span>
      )}
    </div>
  );
}
