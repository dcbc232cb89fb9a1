import type { Metadata } from "next";
import { EventPage } from "@/components/audit/EventPage";

export const metadata: Metadata = { title: "Event" };

/** /events/{source}/{eventId}: "did we process this event, and when?" Every signed-in role. */
export default async function Page({ params }: { params: Promise<{ source: string; eventId: string }> }) {
  const { source, eventId } = await params;
  return <EventPage source={decodeURIComponent(source)} eventId={decodeURIComponent(eventId)} />;
}
