import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { FirstRunPanel } from "@/components/auth/FirstRunPanel";
import { SignInForm } from "@/components/auth/SignInForm";
import { currentUser, redirectIfUnavailable } from "@/lib/auth/pages";
import { RETURN_TO_PARAM, safeReturnTo } from "@/lib/auth/return-to";
import { sessionInfo } from "@/lib/auth/sign-in";

export const metadata: Metadata = { title: "Sign in" };

/**
 * Sign-in: the form (and SSO when configured), or on a fresh install only how to create the first admin.
 * `?next=` names the console page to return to once signed in (lib/auth/return-to.ts).
 */
export default async function Page({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const returnTo = safeReturnTo((await searchParams)[RETURN_TO_PARAM]);
  const user = await currentUser();
  if (user) redirect(returnTo);
  const { adminExists, sso } = await sessionInfo(null).catch((err: unknown) => {
    redirectIfUnavailable(err);
    throw err;
  });
  return adminExists ? <SignInForm sso={sso} returnTo={returnTo} /> : <FirstRunPanel />;
}
