/** `keyward partitions …`: partition mode of the dedup table (lib/retention/partitions.ts). */
import type { Command } from "commander";
import { cliPrincipal } from "@/lib/auth/principal";
import { disablePartitionMode, enablePartitionMode, partitionStatus } from "@/lib/retention/partitions";
import { printTable, withDatabase } from "@/lib/cli/io";

export function registerPartitions(program: Command): void {
  const partitions = program
    .command("partitions")
    .description("partition mode of the dedup table: daily partitions by expiry, expired days dropped whole");

  partitions
    .command("enable")
    .description("convert the dedup table to partition mode (one transaction; claims wait while the rows are copied)")
    .action(async () => {
      await withDatabase(async () => {
        const r = await enablePartitionMode(cliPrincipal());
        console.log(
          `partition mode enabled: ${r.partitions} partitions created (and a DEFAULT one), ${r.rowsMoved} keys moved, ` +
            `${(r.durationMs / 1000).toFixed(2)} s`,
        );
      });
    });

  partitions
    .command("disable")
    .description("convert the dedup table back to one table with a unique key (one transaction)")
    .action(async () => {
      await withDatabase(async () => {
        const r = await disablePartitionMode(cliPrincipal());
        console.log(
          `single-table mode restored: ${r.partitions} partitions merged, ${r.rowsMoved} keys moved, ${(r.durationMs / 1000).toFixed(2)} s`,
        );
      });
    });

  partitions
    .command("status")
    .description("the dedup table's mode, and its partitions with their ranges and estimated rows")
    .option("--json", "print as JSON")
    .action(async (o: { json?: boolean }) => {
      await withDatabase(async () => {
        const s = await partitionStatus();
        if (o.json) return console.log(JSON.stringify(s, null, 2));
        console.log(`mode: ${s.mode}${s.mode === "single" ? " (one table; `keyward partitions enable` switches)" : ""}`);
        printTable(
          s.partitions.map((p) => ({
            partition: p.name,
            from: p.rangeStart ?? "DEFAULT",
            to: p.rangeEnd ?? "",
            "est. rows": String(p.estimatedRows),
          })),
        );
      });
    });
}
