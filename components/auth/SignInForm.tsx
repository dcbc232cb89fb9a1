"use client";

import { LogIn } from "lucide-react";
import { useMutation } from "@tanstack/react-query";
import { useRef, type FormEvent } from "react";
import { api } from "@/components/api";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { TextField } from "@/components/ui/TextField";
import { useHydrated } from "@/components/ui/useHydrated";
import { SsoButton, type SsoProvider } from "./SsoButton";
import styles from "./auth.module.css";
import formStyles from "@/components/ui/forms.module.css";
import { Icon } from "@/components/ui/Icon";

/**
 * Username and password. The server's refusal is shown as it sent it (401 wrong credentials, 429 locked
 * out with the wait, 422 a missing field). Success loads the console afresh, on the page the person had
 * opened (`returnTo`, already checked by the page: lib/auth/return-to.ts) or the Overview.
 */
export function SignInForm({ sso, returnTo = "/" }: { sso: SsoProvider | null; returnTo?: string }) {
  const hydrated = useHydrated();
  const password = useRef<HTMLInputElement>(null);
  const signIn = useMutation({
    mutationFn: (body: { username: string; password: string }) => api("/api/v1/session", { method: "POST", body }),
    // A full page load: the console starts afresh with the new session.
    onSuccess: () => window.location.assign(returnTo),
    onError: () => {
      if (password.current) {
        password.current.value = "";
        password.current.focus();
      }
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    signIn.mutate({ username: String(form.get("username") ?? ""), password: String(form.get("password") ?? "") });
  };
  // Signing in succeeded and the console is loading: keep the button busy until it does.
  const busy = signIn.isPending || signIn.isSuccess;
  return (
    <>
      <h1 className={styles.title}>Sign in</h1>
      {signIn.isError && <ErrorBox title="Sign-in failed" error={signIn.error} />}
      <form className={formStyles.form} method="post" onSubmit={submit} aria-label="Sign in">
        <TextField
          id="sign-in-username"
          label="Username"
          name="username"
          autoComplete="username"
          autoCapitalize="none"
          spellCheck={false}
          required
          autoFocus
        />
        <TextField ref={password} id="sign-in-password" label="Password" name="password" type="password" autoComplete="current-password" required />
        <button type="submit" className="button button--primary button--block" disabled={!hydrated || busy}>
            <Icon icon={LogIn} />
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      {sso && <SsoButton sso={sso} returnTo={returnTo} />}
    </>
  );
}
