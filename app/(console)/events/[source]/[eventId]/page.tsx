import type { Metadata } from "next";
import { EventPage } from "@/components/audit/EventPage";

export const metadata: Metadata = { title: "Event" };

/** /events/{source}/{eventId}: "did we process this event, and when?" Every signed-in role. */
export default async function Page({ params }: { params: Promise<{ source: string; eventId: string }> }) {
  const { source, eventId } = await params;
  return <EventPage source={decode(source)} eventId={decode(eventId)} />;
}

/** Segments arrive percent-encoded; an id that is not valid percent-encoding is taken as it is. */
function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
