import { ActionRow } from "./ActionRow";
import type { ActionRecord } from "./queries";

/** The action log, newest first; each row opens to its details. Display only. */
export function ActivityTable({ actions }: { actions: ActionRecord[] }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">Operator actions, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Actor</th>
            <th scope="col">Action</th>
            <th scope="col">Target</th>
            <th scope="col">Outcome</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {actions.map((a) => (
            <ActionRow key={a.id} action={a} />
          ))}
        </tbody>
      </table>
    </div>
  );
}
