import { ActionRow } from "./ActionRow";
import type { ActionRecord } from "./queries";
import { Table } from "@/components/ui/Table";

/** The action log, newest first; each row opens to its details. Display only. */
export function ActivityTable({ actions }: { actions: ActionRecord[] }) {
  return (
    <Table caption="Operator actions, newest first" columns={["Time", "Actor", "Action", "Target", "Outcome", "Details"]}>
      {actions.map((a) => (
        <ActionRow key={a.id} action={a} />
      ))}
    </Table>
  );
}
