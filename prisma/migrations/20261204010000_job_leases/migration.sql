-- Leases of jobs that must run once at a time across every instance (lib/db/lease.ts): pruning first.
-- A lease is a row, taken and renewed by single statements on the database clock, so it needs no
-- session state: it works through a transaction-mode pooler and on the embedded database's one shared
-- session, where a session-level advisory lock does neither. A holder that dies stops renewing and its
-- lease lapses at lease_until.
CREATE TABLE "job_leases" (
    "name" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "lease_until" TIMESTAMPTZ(6) NOT NULL,

    CONSTRAINT "job_leases_pkey" PRIMARY KEY ("name")
);
