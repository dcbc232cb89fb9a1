/** A console role as a small coloured label. Display only. */
export function RoleBadge({ role }: { role: string }) {
  return <span className={`role-badge role-badge--${role}`}>{role}</span>;
}
