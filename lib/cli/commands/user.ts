/** `keyward user …`: console users. Input is parsed by the same schemas as /api/v1/users. */
import type { Command } from "commander";
import { cliPrincipal } from "@/lib/auth/principal";
import { ROLES } from "@/lib/auth/roles";
import { createUser, createUserRequest, listUsers, resetPassword, resetPasswordRequest, updateUser, updateUserRequest, userParams } from "@/lib/auth/users";
import { parseInput } from "@/lib/http/validate";
import { iso, printTable, promptNewPassword, withDatabase } from "@/lib/cli/io";

export function registerUser(program: Command): void {
  const user = program.command("user").description("console users (viewer, operator, admin)");

  user
    .command("create <name>")
    .description("create a console user; prompts for a password on a terminal, or generates one and prints it once")
    .requiredOption("--role <role>", `one of ${ROLES.join(", ")}`)
    .option("--generate-password", "generate a password even on a terminal")
    .action(async (name: string, o: { role: string; generatePassword?: boolean }) => {
      const password = o.generatePassword || !process.stdin.isTTY ? undefined : await promptNewPassword();
      const request = parseInput(createUserRequest, { username: name, role: o.role, password });
      await withDatabase(async () => {
        const r = await createUser(request, cliPrincipal());
        console.error(`created ${r.user.role} ${r.user.username}.`);
        if (r.generated) {
          console.error("Its password is shown once; store it now:");
          console.log(r.password);
        }
      });
    });

  user
    .command("list")
    .description("list console users")
    .option("--json", "print JSON")
    .action(async (o: { json?: boolean }) => {
      await withDatabase(async () => {
        const rows = await listUsers();
        if (o.json) return console.log(JSON.stringify(rows, null, 2));
        if (rows.length === 0) return console.log("no users yet: keyward user create <name> --role admin");
        printTable(
          rows.map((u) => ({
            USERNAME: u.username,
            ROLE: u.role,
            STATUS: u.disabled ? "disabled" : "active",
            "SIGN-IN": u.sso ? "sso" : "password",
            CREATED: iso(u.createdAt),
            "LAST SEEN": iso(u.lastSeenAt),
          })),
        );
      });
    });

  for (const [verb, disabled] of [["disable", true], ["enable", false]] as const) {
    user
      .command(`${verb} <name>`)
      .description(disabled ? "disable a user: their sessions end at once and they cannot sign in" : "enable a disabled user")
      .action(async (name: string) => {
        const { username } = parseInput(userParams, { username: name });
        const change = parseInput(updateUserRequest, { disabled });
        await withDatabase(async () => {
          const u = await updateUser(username, change, cliPrincipal());
          console.log(`${u.username} is ${u.disabled ? "disabled" : "enabled"}`);
        });
      });
  }

  user
    .command("set-role <name> <role>")
    .description(`change a user's role (${ROLES.join(", ")}); their sessions end`)
    .action(async (name: string, role: string) => {
      const { username } = parseInput(userParams, { username: name });
      const change = parseInput(updateUserRequest, { role });
      await withDatabase(async () => {
        const u = await updateUser(username, change, cliPrincipal());
        console.log(`${u.username} is now ${u.role}`);
      });
    });

  user
    .command("reset-password <name>")
    .description("set a new password (prompted on a terminal, else generated and printed once); sessions end")
    .option("--generate-password", "generate a password even on a terminal")
    .action(async (name: string, o: { generatePassword?: boolean }) => {
      const given = o.generatePassword || !process.stdin.isTTY ? undefined : await promptNewPassword();
      const { username } = parseInput(userParams, { username: name });
      const { password } = parseInput(resetPasswordRequest, { password: given });
      await withDatabase(async () => {
        const r = await resetPassword(username, cliPrincipal(), password);
        console.error(`reset the password of ${name}.`);
        if (r.generated) {
          console.error("The new password is shown once; store it now:");
          console.log(r.password);
        }
      });
    });
}
