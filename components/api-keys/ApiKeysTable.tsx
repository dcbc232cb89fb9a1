import { Time } from "@/components/ui/Time";
import type { ApiKeyItem } from "./queries";
import { RevokeApiKey } from "./RevokeApiKey";
import { Table } from "@/components/ui/Table";
import tableStyles from "@/components/ui/Table.module.css";
import { Status } from "@/components/ui/Status";

function When({ iso, never }: { iso: string | null; never: string }) {
  return <td>{iso ? <Time iso={iso} /> : <span className="muted">{never}</span>}</td>;
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
        <tr key={k.id} className={k.revokedAt ? tableStyles.inactive : undefined}>
          <th scope="row">{k.name}</th>
          <td className="mono" title="The public part of the key: kw_<id>_…">
            {k.id}
          </td>
          <td>
            <span className={tableStyles.chips}>
              {k.scopes.map((s) => (
                <code key={s} className={tableStyles.chip}>
                  {s}
                </code>
              ))}
            </span>
          </td>
          <When iso={k.createdAt} never="—" />
          <When iso={k.lastUsedAt} never="never" />
          <td>
            {k.revokedAt ? (
              <Status tone="off">
                Revoked <Time iso={k.revokedAt} />
              </Status>
            ) : (
              <Status tone="ok">Active</Status>
            )}
          </td>
          <td className={tableStyles.actionsCell}>{!k.revokedAt && <RevokeApiKey apiKey={k} />}</td>
        </tr>
      ))}
    </Table>
  );
}
