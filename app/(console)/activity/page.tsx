import type { Metadata } from "next";
import { ActivityPage } from "@/components/activity/ActivityPage";
import { RoleRequired } from "@/components/auth/RoleRequired";
import { requirePage } from "@/lib/auth/pages";

export const metadata: Metadata = { title: "Activity" };

export default async function Page() {
  const { user, allowed } = await requirePage(["operator"]);
  if (!allowed) return <RoleRequired title="Activity" role="operator" user={user} />;
  return <ActivityPage />;
}
