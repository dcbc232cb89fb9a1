"use client";

import { useMutation } from "@tanstack/react-query";
import { api } from "@/components/api";
import { ssoReturnTo } from "@/lib/auth/return-to";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { useHydrated } from "@/components/ui/useHydrated";
import styles from "./auth.module.css";

export type SsoProvider = { providerId: string; name: string };

/** Better Auth's start of the OpenID Connect flow (app/api/auth/[...all]); it answers with the provider's URL. */
const SSO_START = "/api/auth/sign-in/social";

/** Single sign-on: asks the server for the identity provider's URL, then goes there; it returns to `returnTo`. */
export function SsoButton({ sso, returnTo = "/" }: { sso: SsoProvider; returnTo?: string }) {
  const hydrated = useHydrated();
  const start = useMutation({
    mutationFn: () =>
      api<{ url: string }>(SSO_START, { method: "POST", body: { provider: sso.providerId, callbackURL: ssoReturnTo(returnTo) } }),
    onSuccess: ({ url }) => window.location.assign(url),
  });
  return (
    <div>
      <p className={styles.divider}>
        <span>or</span>
      </p>
      {start.isError && <ErrorBox title="Single sign-on could not start" error={start.error} />}
      <button
        type="button"
        className="button button--block"
        onClick={() => start.mutate()}
        disabled={!hydrated || start.isPending || start.isSuccess}
      >
        {start.isPending || start.isSuccess ? "Redirecting…" : `Sign in with ${sso.name}`}
      </button>
    </div>
  );
}
