import { describe, expect, it } from "vitest";
import { createApiKey, revokeApiKey, verifyApiKey } from "@/lib/auth/api-keys";
import { uniq } from "@/test/setup/db";

import { cliPrincipal } from "@/lib/auth/principal";

const ACTOR = cliPrincipal();
describe("revokeApiKey", () => {
  it("revokes by id first, even when another key is named like that id", async () => {
    const leaked = await createApiKey({ name: uniq("leaked"), scopes: ["claims:write"] }, ACTOR);
    const decoy = await createApiKey({ name: leaked.id, scopes: ["claims:write"] }, ACTOR);
    const revoked = await revokeApiKey(leaked.id, ACTOR);
    expect(revoked.id).toBe(leaked.id);
    expect(await verifyApiKey(leaked.key)).toBeNull();
    expect(await verifyApiKey(decoy.key)).not.toBeNull();
  });
});
