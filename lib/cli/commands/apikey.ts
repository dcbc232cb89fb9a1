/** `keyward apikey …`: API keys for services. Input is parsed by the same schema as POST /api/v1/api-keys. */
import type { Command } from "commander";
import { createApiKey, listApiKeys, revokeApiKey } from "@/lib/auth/api-keys";
import { cliPrincipal } from "@/lib/auth/principal";
import { createApiKeyRequest, SCOPES } from "@/lib/auth/schema";
import { parseInput } from "@/lib/http/validate";
import { iso, printTable, withDatabase } from "@/lib/cli/io";

export function registerApiKey(program: Command): void {
  const apikey = program.command("apikey").description("API keys for services (the key is shown once)");

  apikey
    .command("create")
    .description("create an API key and print it once")
    .requiredOption("--name <name>", "a name for the key, e.g. the calling service")
    .requiredOption("--scopes <scopes>", `comma-separated: ${SCOPES.join(", ")}`, (v: string) =>
      v.split(",").map((s) => s.trim()).filter(Boolean),
    )
    .action(async (o: { name: string; scopes: string[] }) => {
      const request = parseInput(createApiKeyRequest, { name: o.name, scopes: o.scopes });
      await withDatabase(async () => {
        const k = await createApiKey(request, cliPrincipal());
        console.error(`created API key ${k.name} (id ${k.id}, scopes ${k.scopes.join(",")}). It is shown once; store it now:`);
        console.log(k.key);
      });
    });

  apikey
    .command("list")
    .description("list API keys (never the keys themselves)")
    .option("--json", "print JSON")
    .action(async (o: { json?: boolean }) => {
      await withDatabase(async () => {
        const rows = await listApiKeys();
        if (o.json) return console.log(JSON.stringify(rows, null, 2));
        if (rows.length === 0) return console.log("no API keys yet: keyward apikey create --name <n> --scopes claims:write");
        printTable(
          rows.map((k) => ({
            ID: k.id,
            NAME: k.name,
            SCOPES: k.scopes.join(","),
            CREATED: iso(k.createdAt),
            "LAST USED": iso(k.lastUsedAt),
            REVOKED: iso(k.revokedAt),
          })),
        );
      });
    });

  apikey
    .command("revoke <idOrName>")
    .description("revoke an API key; it stops working at once")
    .action(async (idOrName: string) => {
      await withDatabase(async () => {
        const k = await revokeApiKey(idOrName, cliPrincipal());
        console.log(`revoked API key ${k.name} (id ${k.id}) at ${iso(k.revokedAt)}`);
      });
    });
}
