/** Recognising database errors that have a domain meaning. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string }; meta?: { driverAdapterError?: { cause?: { originalCode?: string } } } };
  return (
    e?.code === "P2002" ||
    e?.code === "23505" ||
    e?.cause?.code === "23505" ||
    // A raw query ($queryRaw) failed: the driver adapter's error carries PostgreSQL's SQLSTATE.
    e?.meta?.driverAdapterError?.cause?.originalCode === "23505"
  );
}
