import type { Metadata } from "next";
import { ReplayDetailPage } from "@/components/replay/ReplayDetailPage";
import { requireUser } from "@/lib/auth/pages";

export const metadata: Metadata = { title: "Replay" };

/** /replays/{id}: one replay's progress, health and results, as a link an incident channel can share. Every signed-in role. */
export default async function Page({ params }: { params: Promise<{ id: string }> }) {
  await requireUser();
  const { id } = await params;
  return <ReplayDetailPage replayId={id} />;
}
