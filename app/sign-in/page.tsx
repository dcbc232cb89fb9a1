import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { FirstRunPanel } from "@/components/auth/FirstRunPanel";
import { SignInForm } from "@/components/auth/SignInForm";
import { currentUser, redirectIfUnavailable } from "@/lib/auth/pages";
import { sessionInfo } from "@/lib/auth/sign-in";

export const metadata: Metadata = { title: "Sign in" };

/** Sign-in: the form (and SSO when configured), or on a fresh install only how to create the first admin. */
export default async function Page() {
  const user = await currentUser();
  if (user) redirect("/");
  const { adminExists, sso } = await sessionInfo(null).catch((err: unknown) => {
    redirectIfUnavailable(err);
    throw err;
  });
  return adminExists ? <SignInForm sso={sso} /> : <FirstRunPanel />;
}
