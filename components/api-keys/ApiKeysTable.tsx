import { formatDateTime } from "@/components/ui/format";
import type { ApiKeyItem } from "./queries";
import { RevokeApiKey } from "./RevokeApiKey";
import { Table } from "@/components/ui/Table";

function When({ iso, never }: { iso: string | null; never: string }) {
  return <td>{iso ? <time dateTime={iso}>{formatDateTime(iso)}</time> : <span className="muted">{never}</span>}</td>;
}

/** Every API key, active first; revoked keys stay listed (greyed) with when they were revoked. */
export function ApiKeysTable({ apiKeys }: { apiKeys: ApiKeyItem[] }) {
  const sorted = [...apiKeys].sort((a, b) => Number(a.revokedAt !== null) - Number(b.revokedAt !== null));
  return (
    <Table
      caption="API keys"
      columns={[
        "Name",
        "Id",
        "Scopes",
        "Created",
        { label: "Last used", title: "Stamped at most once a minute" },
        "Status",
        "Actions",
      ]}
    >
      {sorted.map((k) => (
        <tr key={k.id} className={k.revokedAt ? "row--inactive" : undefined}>
          <th scope="row">{k.name}</th>
          <td className="mono" title="The public part of the key: kw_<id>_…">
            {k.id}
          </td>
          <td>
            <span className="chips">
              {k.scopes.map((s) => (
                <code key={s} className="chip">
                  {s}
                </code>
              ))}
            </span>
          </td>
          <When iso={k.createdAt} never="—" />
          <When iso={k.lastUsedAt} never="never" />
          <td>
            {k.revokedAt ? (
              <span className="status status--off">
                Revoked <time dateTime={k.revokedAt}>{formatDateTime(k.revokedAt)}</time>
              </span>
            ) : (
              <span className="status status--ok">Active</span>
            )}
          </td>
          <td className="actions-cell">{!k.revokedAt && <RevokeApiKey apiKey={k} />}</td>
        </tr>
      ))}
    </Table>
  );
}
