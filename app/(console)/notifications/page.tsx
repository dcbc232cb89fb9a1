import type { Metadata } from "next";
import { NotificationsPage } from "@/components/notifications/NotificationsPage";
import { RoleRequired } from "@/components/auth/RoleRequired";
import { requirePage } from "@/lib/auth/pages";

export const metadata: Metadata = { title: "Notifications" };

export default async function Page() {
  const { user, allowed } = await requirePage(["read"]);
  if (!allowed) return <RoleRequired title="Notifications" role="viewer" user={user} />;
  return <NotificationsPage />;
}
