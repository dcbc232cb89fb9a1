import { Time } from "@/components/ui/Time";
import { RoleBadge } from "@/components/ui/RoleBadge";
import type { ConsoleUser } from "./queries";
import { UserActions } from "./UserActions";
import type { ShowPassword } from "./UsersPage";
import { Table } from "@/components/ui/Table";
import tableStyles from "@/components/ui/Table.module.css";
import { Status } from "@/components/ui/Status";

function When({ iso, never = "never" }: { iso: string | null; never?: string }) {
  return <td>{iso ? <Time iso={iso} /> : <span className="muted">{never}</span>}</td>;
}

function UserStatus({ user }: { user: ConsoleUser }) {
  if (user.disabled) return <Status tone="off">Disabled</Status>;
  if (user.role === "none") {
    return (
      <Status tone="warn" title="Signed in through single sign-on, but the identity provider grants no Keyward role">
        No access
      </Status>
    );
  }
  return <Status tone="ok">Active</Status>;
}

/** Every console user with their role, status and sign-in method; actions per row (not on your own). */
export function UsersTable({ users, me, onPassword }: { users: ConsoleUser[]; me: string; onPassword: ShowPassword }) {
  return (
    <Table
      caption="Console users"
      columns={[
        "User",
        "Role",
        "Status",
        "Sign-in",
        "Created",
        { label: "Last seen", title: "The last time one of their sessions was used or renewed" },
        "Actions",
      ]}
    >
      {users.map((u) => (
        <tr key={u.id} className={u.disabled ? tableStyles.inactive : undefined}>
          <th scope="row">
            <span className="mono">{u.username}</span>
            {u.username === me && <span className="muted small"> (you)</span>}
            {u.name !== u.username && <div className="muted small">{u.name}</div>}
          </th>
          <td>
            <RoleBadge role={u.role} />
          </td>
          <td>
            <UserStatus user={u} />
          </td>
          <td>{u.sso ? "Single sign-on" : "Password"}</td>
          <When iso={u.createdAt} />
          <When iso={u.lastSeenAt} />
          <td className={tableStyles.actionsCell}>
            {u.username === me ? (
              <span className="muted small">Another admin can change your account</span>
            ) : (
              <UserActions key={`${u.role}-${u.disabled}`} user={u} onPassword={onPassword} />
            )}
          </td>
        </tr>
      ))}
    </Table>
  );
}
