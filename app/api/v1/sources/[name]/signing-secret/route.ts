/**
 * POST /api/v1/sources/:name/signing-secret — generate (or rotate) the source's Standard Webhooks signing
 * secret (admins): 201 { secret: "whsec_…", setAt }. The secret is shown only in this response; recorded
 * as `source.signing_secret.rotate`.
 */
import { rotateSigningSecret } from "@/lib/sources/signing-secret";
import { json, route } from "@/lib/http/route";

export const POST = route<{ name: string }>(
  async ({ params, principal }) => json(await rotateSigningSecret(params.name, principal), 201),
  { allow: ["admin"] },
);
