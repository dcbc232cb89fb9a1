import type { Metadata } from "next";
import { RoleRequired } from "@/components/auth/RoleRequired";
import { UsersPage } from "@/components/users/UsersPage";
import { requirePage } from "@/lib/auth/pages";

export const metadata: Metadata = { title: "Users" };

export default async function Page() {
  const { user, allowed } = await requirePage(["admin"]);
  if (!allowed) return <RoleRequired title="Users" role="admin" user={user} />;
  return <UsersPage />;
}
