/** `keyward migrate`: apply pending migrations and the schema's upkeep, and say what was done. */
import type { Command } from "commander";
import { closeDb } from "@/lib/db/client";
import { prepareDatabase } from "@/lib/db/prepare";

export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .description("apply pending migrations from prisma/migrations")
    .action(async () => {
      const database = await prepareDatabase({
        upkeep: true,
        report: (s) => {
          if (s.step === "opened") console.log(`database: ${s.target.description}`);
          else if (s.step === "migrated") console.log(s.applied.length ? `applied: ${s.applied.join(", ")}` : "schema is up to date; nothing to apply");
          else if (s.step === "audit_partitions_created") {
            if (s.created > 0) console.log(`created ${s.created} monthly audit partition(s) ahead`);
          } else if (s.step === "dedup_mode") {
            if (s.message) console.log(s.message);
          } else if (s.step === "audit_months_dropped") {
            if (s.months.length > 0) console.log(`dropped audit months past retention: ${s.months.join(", ")}`);
          }
        },
      });
      await closeDb();
      await database.close();
    });
}
