/**
 * POST /api/v1/users/:username/password — set a new password for a local account: { password? }; a
 * generated one is returned once. The user's sessions end. Admins only.
 */
import { z } from "zod";
import { resetPassword } from "@/lib/auth/users";
import { parseOrThrow } from "@/lib/http/validate";
import { json, readJson, route } from "@/lib/http/route";

const body = z.strictObject({ password: z.string().optional() });

export const POST = route<{ username: string }>(
  async ({ req, params, principal }) => {
    const { password } = parseOrThrow(body, await readJson(req, 4096));
    const r = await resetPassword(params.username, principal, password);
    return json({ reset: true, ...(r.generated ? { password: r.password } : {}) });
  },
  { allow: ["admin"] },
);
