import Link from "next/link";

/**
 * An event id, linked to its "did we process this" page (/events/{source}/{eventId}). Used wherever an
 * event id appears; without a source there is no page to link to, so the id is shown plain. Not
 * prefetched: tables list many events, and a person opens one of them, if any.
 */
export function EventLink({ source, eventId, children }: { source: string | null | undefined; eventId: string; children?: React.ReactNode }) {
  if (!source) return <span className="mono">{children ?? eventId}</span>;
  return (
    <Link
      className="mono"
      prefetch={false}
      href={`/events/${encodeURIComponent(source)}/${encodeURIComponent(eventId)}`}
      title={`What happened to ${source}/${eventId}`}
    >
      {children ?? eventId}
    </Link>
  );
}
