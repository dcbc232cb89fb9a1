/**
 * How far a BullMQ inlet has read its queue's failed set (kinds/bullmq.ts): "<score> <job id>" in the
 * inlet's row, so a pass starts where the last one ended, whichever server runs it. Its own module: the
 * kinds must not import inlets.ts, which imports them.
 */
import { database, type Db } from "@/lib/db/transaction";

/** The inlet's position, null before its first pass. */
export async function inletPosition(id: string, db: Db = database()): Promise<string | null> {
  return (await db.prisma.inlet.findUnique({ where: { id }, select: { position: true } }))?.position ?? null;
}

/** Records the inlet's position (several servers may race: one that moves it back only makes the next pass re-read marked jobs, which it skips). */
export async function saveInletPosition(id: string, position: string, db: Db = database()): Promise<void> {
  await db.prisma.inlet.updateMany({ where: { id }, data: { position } });
}
