import { RoleBadge } from "@/components/ui/RoleBadge";
import { formatDateTime } from "@/components/ui/format";
import type { ConsoleUser } from "./queries";
import { UserActions } from "./UserActions";
import type { ShowPassword } from "./UsersPage";
import { Table } from "@/components/ui/Table";

function When({ iso, never = "never" }: { iso: string | null; never?: string }) {
  return <td>{iso ? <time dateTime={iso}>{formatDateTime(iso)}</time> : <span className="muted">{never}</span>}</td>;
}

function UserStatus({ user }: { user: ConsoleUser }) {
  if (user.disabled) return <span className="status status--off">Disabled</span>;
  if (user.role === "none") {
    return (
      <span className="status status--warn" title="Signed in through single sign-on, but the identity provider grants no Keyward role">
        No access
      </span>
    );
  }
  return <span className="status status--ok">Active</span>;
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
        <tr key={u.id} className={u.disabled ? "row--inactive" : undefined}>
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
          <td className="actions-cell">
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
