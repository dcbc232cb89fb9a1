/** Source (sender) schemas: TTL = retry window + queue lag + clock skew + replay margin, finite. */
import { z } from "zod";
import { sourceName } from "@/lib/claims/schema";
import { invalidRequest } from "@/lib/http/validate";
import { instant, unstorableReason, type WithDates } from "@/lib/http/fields";
import { brokerUrlProblem, isBrokerUrl } from "@/lib/inlets/service-url";
import { findPreset, PRESETS } from "@/lib/retention/presets";

export const MAX_TTL_SECONDS = 90 * 86400;

const part = (label: string) =>
  z.number().int(`${label} must be a whole number of seconds`).min(0, `${label} must not be negative`);

export const sourceParts = z.strictObject({
  retryWindowSeconds: part("retryWindowSeconds").min(1, "retryWindowSeconds must be at least 1 second"),
  queueLagSeconds: part("queueLagSeconds"),
  clockSkewSeconds: part("clockSkewSeconds"),
  replaySeconds: part("replaySeconds"),
});

const PART_NAMES = ["retryWindowSeconds", "queueLagSeconds", "clockSkewSeconds", "replaySeconds"] as const;

export const presetName = z.enum(PRESETS.map((x) => x.name) as [string, ...string[]], {
  error: `must be one of ${PRESETS.map((x) => x.name).join(", ")}`,
});

export const deadLetterRetention = z
  .number()
  .int("deadLetterRetentionSeconds must be a whole number of seconds")
  .min(1, "deadLetterRetentionSeconds must be at least 1 second")
  .max(365 * 86400, "deadLetterRetentionSeconds must be at most 365 days")
  .nullable();

/** An http(s) replay destination: without credentials (the signature authenticates the request). */
const httpDestination = z
  .url({ protocol: /^https?$/, error: "replayDestination must be an http://, https://, amqp(s)://, bullmq(s):// or nats:// URL" })
  .max(2048, "replayDestination must be at most 2048 characters")
  // A URL parser accepts a raw NUL or lone surrogate in the path (it would percent-encode it); the text
  // is stored as sent, so it must be text PostgreSQL can store.
  .refine((u) => unstorableReason(u) === null, "replayDestination must not contain NUL characters or lone surrogates")
  .refine((u) => {
    // zod runs refinements after a failed format check too: an unparseable URL is reported once, above.
    if (!URL.canParse(u)) return true;
    const url = new URL(u);
    return !url.username && !url.password;
  }, "replayDestination must not carry credentials (the signature authenticates the request)");

/**
 * Where replays of the source's dead letters are sent, or null to clear it: an http(s) URL they are
 * POSTed to, or a broker's URL they are published to (amqp(s): lib/replay/amqp-publish.ts; bullmq(s):
 * bullmq-publish.ts; nats: nats-publish.ts), whose credentials are
 * stored encrypted and shown masked (lib/sources/replay-destination.ts).
 */
export const replayDestination = z
  .string({ error: "replayDestination must be a URL" })
  .superRefine((u, ctx) => {
    if (isBrokerUrl(u)) {
      const problem = brokerUrlProblem(u);
      if (problem) ctx.addIssue({ code: "custom", message: `replayDestination ${problem}` });
      return;
    }
    const r = httpDestination.safeParse(u);
    if (!r.success) for (const issue of r.error.issues) ctx.addIssue({ code: "custom", message: issue.message });
  })
  .nullable();

/**
 * Whether `complete` may save a result with this source's keys, answered to their duplicates (README "Saved
 * results"). Off unless turned on.
 */
export const saveResults = z.boolean({ error: "saveResults must be true or false" });

const withinMaxTtl = <T extends z.infer<typeof sourceParts>>(s: z.ZodType<T>) =>
  s.refine((v) => ttlOf(v) <= MAX_TTL_SECONDS, {
    message: `TTL (the sum of the four parts) must be at most ${MAX_TTL_SECONDS} seconds (90 days)`,
    path: ["ttlSeconds"],
  });

/**
 * A new source: a name, and either the four parts or a preset (parts given alongside a preset override
 * it), optionally its dead-letter retention.
 */
export const createSourceRequest = withinMaxTtl(
  z
    .strictObject({
      name: sourceName,
      preset: presetName.optional(),
      retryWindowSeconds: sourceParts.shape.retryWindowSeconds.optional(),
      queueLagSeconds: sourceParts.shape.queueLagSeconds.optional(),
      clockSkewSeconds: sourceParts.shape.clockSkewSeconds.optional(),
      replaySeconds: sourceParts.shape.replaySeconds.optional(),
      deadLetterRetentionSeconds: deadLetterRetention.optional(),
      saveResults: saveResults.optional(),
    })
    .transform((v, ctx) => {
      const preset = v.preset ? findPreset(v.preset) : undefined;
      const parts = { ...preset?.parts };
      for (const k of PART_NAMES) if (v[k] !== undefined) parts[k] = v[k];
      const missing = PART_NAMES.filter((k) => parts[k] === undefined);
      for (const k of missing) ctx.addIssue({ code: "custom", path: [k], message: `${k} is required (or choose a preset)` });
      if (missing.length) return z.NEVER;
      const full = parts as z.infer<typeof sourceParts>;
      const matchesPreset = preset && PART_NAMES.every((k) => preset.parts[k] === full[k]);
      return {
        name: v.name,
        ...full,
        preset: matchesPreset ? preset.name : null,
        deadLetterRetentionSeconds: v.deadLetterRetentionSeconds ?? null,
        saveResults: v.saveResults ?? false,
      };
    }),
);
export type CreateSourceRequest = z.input<typeof createSourceRequest>;
/** A new source as createSource takes it: parsed, the preset's parts filled in. */
export type NewSource = z.output<typeof createSourceRequest>;

/** A change to a source: a preset, any of the parts, and/or the dead-letter retention (null clears it). */
export const updateSourceRequest = z
  .strictObject({
    preset: presetName.optional(),
    retryWindowSeconds: sourceParts.shape.retryWindowSeconds.optional(),
    queueLagSeconds: sourceParts.shape.queueLagSeconds.optional(),
    clockSkewSeconds: sourceParts.shape.clockSkewSeconds.optional(),
    replaySeconds: sourceParts.shape.replaySeconds.optional(),
    deadLetterRetentionSeconds: deadLetterRetention.optional(),
    replayDestination: replayDestination.optional(),
    saveResults: saveResults.optional(),
  })
  .refine(
    (v) => Object.keys(v).length > 0,
    "send at least one of preset, the four parts, deadLetterRetentionSeconds, replayDestination, saveResults",
  );
export type UpdateSourceRequest = z.input<typeof updateSourceRequest>;
export type SourceChange = z.output<typeof updateSourceRequest>;

/** The `{name}` path segment of /api/v1/sources/{name}. */
export const sourceParams = z.strictObject({ name: sourceName });

/** Applies an update to the current parts: the merged parts, and the preset they still match (or null). */
export function applySourceUpdate(
  current: z.infer<typeof sourceParts> & { preset: string | null },
  change: z.infer<typeof updateSourceRequest>,
): z.infer<typeof sourceParts> & { preset: string | null } {
  const preset = change.preset ? findPreset(change.preset) : undefined;
  const parts: z.infer<typeof sourceParts> = {
    retryWindowSeconds: current.retryWindowSeconds,
    queueLagSeconds: current.queueLagSeconds,
    clockSkewSeconds: current.clockSkewSeconds,
    replaySeconds: current.replaySeconds,
    ...preset?.parts,
  };
  for (const k of PART_NAMES) if (change[k] !== undefined) parts[k] = change[k];
  const candidate = preset ?? (current.preset ? findPreset(current.preset) : undefined);
  const still = candidate && PART_NAMES.every((k) => candidate.parts[k] === parts[k]) ? candidate.name : null;
  return { ...parts, preset: still };
}

export function checkTtl(parts: z.infer<typeof sourceParts>): void {
  const { retryWindowSeconds, queueLagSeconds, clockSkewSeconds, replaySeconds } = parts;
  const r = withinMaxTtl(sourceParts).safeParse({ retryWindowSeconds, queueLagSeconds, clockSkewSeconds, replaySeconds });
  if (!r.success) throw invalidRequest(r.error.issues);
}

export function ttlOf(p: z.infer<typeof sourceParts>): number {
  return p.retryWindowSeconds + p.queueLagSeconds + p.clockSkewSeconds + p.replaySeconds;
}

/** A source's settings as create and update answer them (times as ISO text). */
export const sourceInfoSchema = z.object({
  ...sourceParts.shape,
  name: z.string(),
  ttlSeconds: z.number().int().nonnegative(),
  preset: z.string().nullable(),
  deadLetterRetentionSeconds: z.number().int().positive().nullable(),
  /** Where replays are delivered (an http(s) URL, or an amqp(s) URL with its password masked), or null. */
  replayDestination: z.string().nullable(),
  /** When the signing secret was last generated; the secret itself is never returned after its creation. */
  signingSecretSetAt: instant.nullable(),
  /** Until when the secret before the last rotation also signs replays (null: no grace period was given). */
  signingSecretGraceUntil: instant.nullable(),
  /** Whether `complete` may save a result with the source's keys. */
  saveResults: z.boolean(),
  createdAt: instant,
  updatedAt: instant,
});
type SourceTimes = "signingSecretSetAt" | "signingSecretGraceUntil" | "createdAt" | "updatedAt";
/** A source as the server holds it: the answer's shape, its times as Dates. */
export type SourceInfo = WithDates<z.infer<typeof sourceInfoSchema>, SourceTimes>;

/** One invariant check on a source's retention (lib/retention/invariants.ts). */
export const invariantSchema = z.object({ id: z.string(), ok: z.boolean(), message: z.string() });

/** A source as GET /api/v1/sources answers it: its settings, invariant checks and projected size. */
export const sourceReportSchema = sourceInfoSchema.extend({
  auditRetentionSeconds: z.number().int().nonnegative(),
  invariants: z.array(invariantSchema),
  projection: z.object({
    /** Claims per second over the last hour. */
    claimRate: z.number().nonnegative(),
    /** Steady-state live keys: claim rate × TTL. */
    keys: z.number().nonnegative(),
    bytesPerKey: z.number().nonnegative(),
    bytesPerKeyMeasured: z.boolean(),
    bytes: z.number().nonnegative(),
  }),
});
export type SourceReport = WithDates<z.infer<typeof sourceReportSchema>, SourceTimes>;
export const sourceListSchema = z.object({ sources: z.array(sourceReportSchema) });
export type SourceList = z.infer<typeof sourceListSchema>;

/** GET /api/v1/source-names: every source's name, by name (a picker's options; 6,000 names are ~107 KB where the full list is ~5 MB). */
export const sourceNamesSchema = z.object({ names: z.array(z.string()) });

/** POST /api/v1/sources/{name}/preview: the source as it is and as the change would leave it. */
export const sourcePreviewSchema = z.object({ current: sourceReportSchema, preview: sourceReportSchema });
export type SourcePreview = { current: SourceReport; preview: SourceReport };

/** POST /api/v1/sources/{name}/extend: the live keys moved to the source's current TTL. */
export const extendedKeysSchema = z.object({ source: z.string(), ttlSeconds: z.number().int().nonnegative(), extended: z.number().int().nonnegative() });
export type ExtendedKeys = z.infer<typeof extendedKeysSchema>;

/** POST /api/v1/sources/{name}/signing-secret: the new secret (shown only here) and until when the previous one still signs. */
export const rotatedSecretSchema = z.object({ secret: z.string().startsWith("whsec_"), setAt: instant, graceUntil: instant.nullable() });
export type RotatedSecret = z.infer<typeof rotatedSecretSchema>;
