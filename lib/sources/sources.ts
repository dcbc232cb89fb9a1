/** Creating and listing sources. A source's TTL is always the sum of its four parts (a CHECK enforces it too). */
import { KeywardError } from "../errors";
import { prisma } from "../db/client";
import { isUniqueViolation } from "../db/errors";
import { parseOrThrow } from "../http/validate";
import { recordAction } from "../audit/actions";
import type { Principal } from "../auth/principal";
import { createSourceRequest, ttlOf, type CreateSourceRequest, type SourceInfo } from "./schema";

/** Creates a source; recorded as `source.create` in the operator action log. */
export async function createSource(input: CreateSourceRequest, actor: Principal): Promise<SourceInfo> {
  const s = parseOrThrow(createSourceRequest, input);
  try {
    return await prisma().$transaction(async (tx) => {
      const created = await tx.source.create({ data: { ...s, ttlSeconds: ttlOf(s) } });
      await recordAction(
        actor,
        { action: "source.create", target: { type: "source", id: s.name }, source: s.name, after: { ...s, ttlSeconds: created.ttlSeconds } },
        tx,
      );
      return created;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw KeywardError.conflict("source_exists", `source "${s.name}" already exists`);
    throw err;
  }
}

export async function listSources(): Promise<SourceInfo[]> {
  return prisma().source.findMany({ orderBy: { name: "asc" } });
}
