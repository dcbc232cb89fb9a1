import Link from "next/link";

/**
 * An event id linking to its page (/events/{source}/{eventId}). Not prefetched: tables list many events,
 * and a person opens one of them, if any.
 */
export function EventLink({ source, eventId }: { source: string; eventId: string }) {
  return (
    <Link className="mono" prefetch={false} href={`/events/${encodeURIComponent(source)}/${encodeURIComponent(eventId)}`}>
      {eventId}
    </Link>
  );
}
