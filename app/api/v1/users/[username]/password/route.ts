/**
 * POST /api/v1/users/:username/password — set a new password for a local account: { password? }; a
 * generated one is returned once. The user's sessions end. Admins only.
 */
import { passwordResetSchema, resetPassword, resetPasswordRequest, userParams } from "@/lib/auth/users";
import { json, route } from "@/lib/http/route";

export const POST = route(
  async ({ params, body, principal }) => {
    const r = await resetPassword(params.username, principal, body.password);
    return json({ reset: true, ...(r.generated ? { password: r.password } : {}) });
  },
  {
    allow: ["admin"],
    params: userParams,
    body: resetPasswordRequest,
    maxBodyBytes: 4096,
    summary: "Set a new password for a local account (a generated one is returned once)",
    responses: { 200: { description: "{ reset, password? }", schema: passwordResetSchema } },
    errors: [404, 409],
  },
);
