"use client";

import { LogOut } from "lucide-react";
import { useMutation } from "@tanstack/react-query";
import { api, isSessionEnded } from "@/components/api";
import { RoleBadge } from "@/components/ui/RoleBadge";
import { useSession } from "./SessionProvider";
import styles from "./auth.module.css";
import formStyles from "@/components/ui/forms.module.css";
import { Icon } from "@/components/ui/Icon";

/** Who is signed in, and signing out. A full page load follows, so nothing of this session stays in memory. */
export function UserMenu() {
  const user = useSession();
  const signOut = useMutation({
    mutationFn: () => api("/api/v1/session", { method: "DELETE" }),
    // eslint-disable-next-line @next/next/no-location-assign-relative-destination -- a full page load: nothing of this session stays in memory
    onSuccess: () => window.location.assign("/sign-in"),
    // A session that has already ended (401) is as good as signed out.
    // eslint-disable-next-line @next/next/no-location-assign-relative-destination -- a full page load: nothing of this session stays in memory
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
        <Icon icon={LogOut} size="sm" />
        {signOut.isPending ? "Signing out…" : "Sign out"}
      </button>
      {signOut.isError && !isSessionEnded(signOut.error) && (
        <span className={formStyles.error} role="alert">
          Sign-out failed: {signOut.error.message}
        </span>
      )}
    </div>
  );
}
