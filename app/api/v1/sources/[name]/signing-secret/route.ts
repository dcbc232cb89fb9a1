/**
 * POST /api/v1/sources/:name/signing-secret — generate (or rotate) the source's Standard Webhooks signing
 * secret (admins), optional body { graceSeconds } (default KEYWARD_SIGNING_SECRET_GRACE_SECONDS, 24 h):
 * 201 { secret: "whsec_…", setAt, graceUntil }. The previous secret keeps signing replays next to the new
 * one until graceUntil. The secret is shown only in this response; recorded as `source.signing_secret.rotate`.
 */
import { rotateSigningSecret, rotateSigningSecretRequest } from "@/lib/sources/signing-secret";
import { rotatedSecretSchema, sourceParams } from "@/lib/sources/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ params, body, principal }) => json(await rotateSigningSecret(params.name, principal, body), 201), {
  allow: ["admin"],
  params: sourceParams,
  body: rotateSigningSecretRequest,
  optionalBody: true,
  maxBodyBytes: 4096,
  summary: "Generate or rotate the source's Standard Webhooks signing secret (shown only here)",
  responses: { 201: { description: "{ secret, setAt, graceUntil }", schema: rotatedSecretSchema } },
  errors: [404],
});
