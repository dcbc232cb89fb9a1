import { formatDateTime } from "@/components/ui/format";
import type { ApiKeyItem } from "./queries";
import { RevokeApiKey } from "./RevokeApiKey";

function When({ iso, never }: { iso: string | null; never: string }) {
  return <td>{iso ? <time dateTime={iso}>{formatDateTime(iso)}</time> : <span className="muted">{never}</span>}</td>;
}

/** Every API key, active first; revoked keys stay listed (greyed) with when they were revoked. */
export function ApiKeysTable({ apiKeys }: { apiKeys: ApiKeyItem[] }) {
  const sorted = [...apiKeys].sort((a, b) => Number(a.revokedAt !== null) - Number(b.revokedAt !== null));
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">API keys</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Id</th>
            <th scope="col">Scopes</th>
            <th scope="col">Created</th>
            <th scope="col" title="Stamped at most once a minute">
              Last used
            </th>
            <th scope="col">Status</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
    </div>
  );
}
