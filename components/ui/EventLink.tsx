import Link from "next/link";

/** An event id linking to its page (/events/{source}/{eventId}): its key, audit history and dead letters. */
export function EventLink({ source, eventId }: { source: string; eventId: string }) {
  return (
    <Link className="mono" href={`/events/${encodeURIComponent(source)}/${encodeURIComponent(eventId)}`}>
      {eventId}
    </Link>
  );
}
