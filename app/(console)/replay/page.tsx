import type { Metadata } from "next";
import { ReplayPage } from "@/components/replay/ReplayPage";
import { requireUser } from "@/lib/auth/pages";

export const metadata: Metadata = { title: "Replay" };

/** Every signed-in role sees dead letters and replays; operators run the wizard (the API checks again). */
export default async function Page() {
  await requireUser();
  return <ReplayPage />;
}
