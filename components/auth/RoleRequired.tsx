import type { UserPrincipal } from "@/lib/auth/principal";
import type { Role } from "@/lib/auth/roles";
import { PageHeader } from "@/components/ui/PageHeader";
import { Panel } from "@/components/ui/Panel";
import { RoleBadge } from "@/components/ui/RoleBadge";
import styles from "./auth.module.css";

/** What a page shows someone whose role may not see it (requirePage said no). Rendered on the server. */
export function RoleRequired({ title, role, user }: { title: string; role: Role; user: UserPrincipal }) {
  return (
    <>
      <PageHeader title={title} />
      <Panel title={`You need the ${role} role`} titleClassName={styles.refusalTitle} className={styles.refusal}>
        <p>
          You are signed in as <strong>{user.username}</strong> with the <RoleBadge role={user.role} /> role, which may not
          see this page. Ask an admin to change your role if you need it.
        </p>
      </Panel>
    </>
  );
}
