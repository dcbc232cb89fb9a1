/** Creating and listing sources. A source's TTL is always the sum of its four parts (a CHECK enforces it too). */
import { KeywardError } from "../errors";
import { prisma } from "../db/client";
import { isUniqueViolation } from "../db/errors";
import { parseOrThrow } from "../http/validate";
import { createSourceRequest, ttlOf, type CreateSourceRequest, type SourceInfo } from "./schema";

export async function createSource(input: CreateSourceRequest): Promise<SourceInfo> {
  const s = parseOrThrow(createSourceRequest, input);
  try {
    return await prisma().source.create({ data: { ...s, ttlSeconds: ttlOf(s) } });
  } catch (err) {
    if (isUniqueViolation(err)) throw KeywardError.conflict("source_exists", `source "${s.name}" already exists`);
    throw err;
  }
}

export async function listSources(): Promise<SourceInfo[]> {
  return prisma().source.findMany({ orderBy: { name: "asc" } });
}
