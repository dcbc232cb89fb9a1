/**
 * The advisor's late-duplicate evidence, judged (issue 23 §6). Pure; unit-tested in
 * test/retention/evidence.unit.test.ts. advice.ts reads its inputs; advisor.ts decides with it.
 *
 * - **Sender retries only.** A late claim made while a Keyward replay re-drove the event (late_duplicates
 *   `via_replay`) is an operator's decision, not a sender's retry: a replay sends an event processed
 *   before whose key is gone only when an operator forces it with a reason (the re-check skips it
 *   otherwise). Those are counted apart and never push the retry window.
 * - **Against the TTL in force then.** Each late duplicate is judged against the TTL that gave the first
 *   claim's key its expiry: the source's TTL history, from its operator log (`source.create` and
 *   `source.update` rows with their before/after `ttlSeconds`). A late duplicate under an earlier, shorter
 *   TTL says how late the sender retries (it still counts toward the retry window), but it is not a
 *   failure of the TTL in force now.
 */

/** One TTL change of the source, from its operator log (oldest first): `before` null for its creation. */
export type TtlEdit = { at: Date; beforeTtlSeconds: number | null; afterTtlSeconds: number };

/** A span of time with one TTL: `from` null (since the beginning of what is known), `until` null (now). */
export type TtlEpoch = { from: Date | null; until: Date | null; ttlSeconds: number };

/**
 * The spans of the source's TTL history, oldest first; the last one is the TTL in force now
 * (`currentTtlSeconds`). Edits that did not change the TTL are skipped, and so is the creation (its TTL
 * is the first span's: nothing was claimed before it). Epoch i covers first claims made at or after
 * change i−1 and before change i (SQL: `width_bucket(first_claim_at, <change times>)` is that i).
 */
export function ttlEpochs(edits: readonly TtlEdit[], currentTtlSeconds: number): { epochs: TtlEpoch[]; boundaries: Date[] } {
  const changes = edits.filter((e) => e.beforeTtlSeconds !== null && e.beforeTtlSeconds !== e.afterTtlSeconds);
  const epochs: TtlEpoch[] = [];
  const boundaries = changes.map((e) => e.at);
  for (let i = 0; i <= changes.length; i++) {
    const ttl = i < changes.length ? changes[i].beforeTtlSeconds! : currentTtlSeconds;
    epochs.push({ from: i === 0 ? null : changes[i - 1].at, until: i < changes.length ? changes[i].at : null, ttlSeconds: ttl });
  }
  return { epochs, boundaries };
}

/** Late duplicates grouped by the epoch of their first claim and whether a replay made the late claim. */
export type LateGroup = { epoch: number; viaReplay: boolean; count: number; maxGapSeconds: number };

export type EpochEvidence = TtlEpoch & { current: boolean; count: number; maxGapSeconds: number };

export type LateEvidence = {
  /** Late duplicates from the sender's own retries (replays left out). */
  sender: { count: number; maxGapSeconds: number | null };
  /** The sender's late duplicates by the TTL in force at their first claim, oldest first (only epochs with any). */
  byTtl: EpochEvidence[];
  /** The sender's late duplicates whose first claim was under the TTL in force now. */
  underCurrentTtl: { count: number; maxGapSeconds: number | null };
  /** Late claims made by a Keyward replay (an operator's forced replay): shown apart, never evidence. */
  replays: { count: number; maxGapSeconds: number | null };
};

const maxOf = (xs: number[]) => (xs.length ? Math.max(...xs) : null);

/** Judges grouped late duplicates against the TTL history. */
export function judgeLateDuplicates(groups: readonly LateGroup[], epochs: readonly TtlEpoch[]): LateEvidence {
  const last = epochs.length - 1;
  const sender = groups.filter((g) => !g.viaReplay);
  const replays = groups.filter((g) => g.viaReplay);
  const sum = (gs: readonly LateGroup[]) => gs.reduce((n, g) => n + g.count, 0);
  const byTtl: EpochEvidence[] = [];
  epochs.forEach((e, i) => {
    const gs = sender.filter((g) => Math.min(Math.max(g.epoch, 0), last) === i);
    if (gs.length) byTtl.push({ ...e, current: i === last, count: sum(gs), maxGapSeconds: maxOf(gs.map((g) => g.maxGapSeconds))! });
  });
  const current = byTtl.find((b) => b.current);
  return {
    sender: { count: sum(sender), maxGapSeconds: maxOf(sender.map((g) => g.maxGapSeconds)) },
    byTtl,
    underCurrentTtl: { count: current?.count ?? 0, maxGapSeconds: current?.maxGapSeconds ?? null },
    replays: { count: sum(replays), maxGapSeconds: maxOf(replays.map((g) => g.maxGapSeconds)) },
  };
}

/** No late duplicate at all. */
export const NO_LATE_EVIDENCE: LateEvidence = {
  sender: { count: 0, maxGapSeconds: null },
  byTtl: [],
  underCurrentTtl: { count: 0, maxGapSeconds: null },
  replays: { count: 0, maxGapSeconds: null },
};
