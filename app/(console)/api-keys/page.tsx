import type { Metadata } from "next";
import { ApiKeysPage } from "@/components/api-keys/ApiKeysPage";
import { RoleRequired } from "@/components/auth/RoleRequired";
import { requirePage } from "@/lib/auth/pages";

export const metadata: Metadata = { title: "API keys" };

export default async function Page() {
  const { user, allowed } = await requirePage(["admin"]);
  if (!allowed) return <RoleRequired title="API keys" role="admin" user={user} />;
  return <ApiKeysPage />;
}
