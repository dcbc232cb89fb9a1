import type { Metadata } from "next";
import { ReplayPage } from "@/components/replay/ReplayPage";
import { filtersFromParams } from "@/components/replay/dead-letter-list";
import { requireUser } from "@/lib/auth/pages";

export const metadata: Metadata = { title: "Replay" };

/**
 * /replay?source&status&from&to&errorContains — every signed-in role sees dead letters and replays;
 * operators run the wizard (the API checks again). The filters come from the URL, so a view can be shared.
 */
export default async function Page({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  await requireUser();
  return <ReplayPage initialFilters={filtersFromParams(await searchParams)} />;
}
