/**
 * Console accounts: create (with a given or generated password), list, disable/enable, change role,
 * reset password. Local accounts sign in with username + password; SSO accounts are created by their
 * first sign-in. Each change is recorded in the operator action log in the same transaction.
 * Disabling a user or changing their role ends their sessions at once.
 */
import "server-only";
import { execute } from "@/lib/db/sql";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { KeywardError } from "@/lib/errors";
import { isUniqueViolation } from "@/lib/db/errors";
import { database, withTransaction, type Db } from "@/lib/db/transaction";
import { instant, storableText } from "@/lib/http/fields";
import { recordAction } from "@/lib/audit/actions";
import { getAuth } from "./auth";
import type { Principal } from "./principal";
import { role, ROLES, type Role } from "./roles";

export const username = z
  .string()
  .transform((s) => s.trim().toLowerCase())
  .pipe(z.string().regex(/^[a-z0-9][a-z0-9._-]{1,63}$/, "must be 2-64 characters: letters, digits, '.', '_' or '-'"));

/** A user as named in the API and CLI: a local account's username, or an SSO account's email. */
export const userRef = z
  .string()
  .transform((s) => s.trim().toLowerCase())
  .pipe(z.string().min(1, "is required").max(254, "must be at most 254 characters"));

export const password = z
  .string()
  .min(12, "must be at least 12 characters")
  .max(256, "must be at most 256 characters");

export const createUserRequest = z.strictObject({
  username,
  role,
  /** Omit to have one generated; it is returned once. */
  password: password.optional(),
  name: storableText().trim().min(1).max(128).optional(),
});

export const updateUserRequest = z
  .strictObject({ role: role.optional(), disabled: z.boolean().optional() })
  .refine((v) => v.role !== undefined || v.disabled !== undefined, "send role and/or disabled");

/** The `{username}` path segment of /api/v1/users/{username}. */
export const userParams = z.strictObject({ username: userRef });

/** POST /api/v1/users/{username}/password: a new password, or none to have one generated. */
export const resetPasswordRequest = z.strictObject({ password: password.optional() });

export type NewUser = z.output<typeof createUserRequest>;

/** A console user as the API answers it (UserInfo in JSON). */
export const userSchema = z.object({
  id: z.string(),
  username: z.string(),
  name: z.string(),
  role: z.enum([...ROLES, "none"]),
  disabled: z.boolean(),
  sso: z.boolean(),
  createdAt: instant,
  lastSeenAt: instant.nullable(),
});
export const userListSchema = z.object({ users: z.array(userSchema) });
/** POST /users: the user, and the password when it was generated (shown once). */
export const createdUserSchema = z.object({ user: userSchema, password: z.string().optional() });
export const updatedUserSchema = z.object({ user: userSchema });
export const passwordResetSchema = z.object({ reset: z.literal(true), password: z.string().optional() });
export type UserChange = z.output<typeof updateUserRequest>;

export type UserInfo = {
  id: string;
  username: string;
  name: string;
  role: Role | "none";
  disabled: boolean;
  sso: boolean;
  createdAt: Date;
  lastSeenAt: Date | null;
};

const LOCAL_EMAIL_DOMAIN = "local.keyward.invalid";

export function generatePassword(): string {
  return randomBytes(18).toString("base64url");
}

async function hashPassword(plain: string): Promise<string> {
  const ctx = await (await getAuth()).$context;
  return ctx.password.hash(plain);
}

/** Creates a local account; `password` in the result is the only time it exists in clear. */
export async function createUser(
  req: NewUser,
  actor: Principal,
  db: Db = database(),
): Promise<{ user: UserInfo; password: string; generated: boolean }> {
  const plain = req.password ?? generatePassword();
  const hash = await hashPassword(plain);
  const id = randomBytes(12).toString("base64url");
  try {
    const user = await withTransaction(
      async (tx) => {
        const u = await tx.prisma.authUser.create({
          data: {
            id,
            name: req.name ?? req.username,
            email: `${req.username}@${LOCAL_EMAIL_DOMAIN}`,
            emailVerified: true,
            username: req.username,
            displayUsername: req.username,
            role: req.role,
            accounts: { create: { id: randomBytes(12).toString("base64url"), accountId: id, providerId: "credential", password: hash } },
          },
          include: { accounts: { select: { providerId: true } } },
        });
        await recordAction(actor, { action: "user.create", target: { type: "user", id: req.username }, after: { role: req.role } }, tx);
        return u;
      },
      { db },
    );
    return { user: toInfo({ ...user, sessions: [] }), password: plain, generated: req.password === undefined };
  } catch (err) {
    if (isUniqueViolation(err)) throw KeywardError.conflict("user_exists", `a user named "${req.username}" already exists`);
    throw err;
  }
}

export async function listUsers(db: Db = database()): Promise<UserInfo[]> {
  const rows = await db.prisma.authUser.findMany({
    orderBy: { createdAt: "asc" },
    include: {
      accounts: { select: { providerId: true } },
      sessions: { select: { updatedAt: true }, orderBy: { updatedAt: "desc" }, take: 1 },
    },
  });
  return rows.map(toInfo);
}

export async function countActiveAdmins(db: Db = database()): Promise<number> {
  return db.prisma.authUser.count({ where: { role: "admin", disabled: false } });
}

/**
 * Changes role and/or disabled of the user `uname` (a parsed userRef). Refuses to leave no active admin.
 * Ends the user's sessions.
 */
export async function updateUser(uname: string, change: UserChange, actor: Principal, db: Db = database()): Promise<UserInfo> {
  return withTransaction(
    async (tx) => {
      // Raw SQL: Prisma has no FOR UPDATE. Locking the admins makes two concurrent demotions take turns,
      // so both cannot see "another admin remains".
      await execute("SELECT id FROM auth_users WHERE role = 'admin' FOR UPDATE", [], tx);
      const before = await tx.prisma.authUser.findFirst({ where: { OR: [{ username: uname }, { email: uname }] } });
      if (!before) throw KeywardError.notFound("user_not_found", `no user named "${uname}"`);
      if (change.role !== undefined && change.role !== before.role) {
        const local = await tx.prisma.authAccount.count({ where: { userId: before.id, providerId: "credential" } });
        if (local === 0) {
          throw KeywardError.conflict(
            "sso_role",
            `"${uname}" signs in through single sign-on: its role comes from the identity provider at every sign-in`,
          );
        }
      }
      const after = { role: change.role ?? before.role, disabled: change.disabled ?? before.disabled };
      const losesAdmin = before.role === "admin" && !before.disabled && (after.role !== "admin" || after.disabled);
      if (losesAdmin) {
        const others = await tx.prisma.authUser.count({ where: { role: "admin", disabled: false, id: { not: before.id } } });
        if (others === 0) {
          throw KeywardError.conflict("last_admin", `"${uname}" is the last active admin; make another admin first`);
        }
      }
      const updated = await tx.prisma.authUser.update({
        where: { id: before.id },
        data: { role: after.role, disabled: after.disabled },
        include: { accounts: { select: { providerId: true } } },
      });
      await tx.prisma.authSession.deleteMany({ where: { userId: before.id } });
      const action = change.disabled === true ? "user.disable" : change.disabled === false && change.role === undefined ? "user.enable" : "user.update";
      await recordAction(
        actor,
        {
          action,
          target: { type: "user", id: uname },
          before: { role: before.role, disabled: before.disabled },
          after,
        },
        tx,
      );
      return toInfo({ ...updated, sessions: [] });
    },
    { db },
  );
}

/**
 * Sets a new password (`given`, already checked against the `password` rules, or a generated one) for
 * the local account `uname` (a parsed userRef) and ends its sessions.
 */
export async function resetPassword(
  uname: string,
  actor: Principal,
  given?: string,
  db: Db = database(),
): Promise<{ password: string; generated: boolean }> {
  const plain = given ?? generatePassword();
  const hash = await hashPassword(plain);
  await withTransaction(
    async (tx) => {
      const user = await tx.prisma.authUser.findFirst({ where: { OR: [{ username: uname }, { email: uname }] } });
      if (!user) throw KeywardError.notFound("user_not_found", `no user named "${uname}"`);
      const updated = await tx.prisma.authAccount.updateMany({
        where: { userId: user.id, providerId: "credential" },
        data: { password: hash, updatedAt: new Date() },
      });
      if (updated.count === 0) {
        throw KeywardError.conflict("not_local_user", `"${uname}" signs in through single sign-on and has no password`);
      }
      await tx.prisma.authSession.deleteMany({ where: { userId: user.id } });
      await recordAction(actor, { action: "user.reset_password", target: { type: "user", id: uname } }, tx);
    },
    { db },
  );
  return { password: plain, generated: given === undefined };
}

function toInfo(row: {
  id: string;
  username: string | null;
  email: string;
  name: string;
  role: string;
  disabled: boolean;
  createdAt: Date;
  accounts: { providerId: string }[];
  sessions: { updatedAt: Date }[];
}): UserInfo {
  return {
    id: row.id,
    username: row.username ?? row.email,
    name: row.name,
    role: row.role as UserInfo["role"],
    disabled: row.disabled,
    sso: !row.accounts.some((a) => a.providerId === "credential"),
    createdAt: row.createdAt,
    lastSeenAt: row.sessions[0]?.updatedAt ?? null,
  };
}
