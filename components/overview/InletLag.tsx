"use client";

import { useQuery } from "@tanstack/react-query";
import { overviewQuery } from "./queries";
import { inletLagRow } from "./inlet-lag";
import { Table } from "@/components/ui/Table";
import textStyles from "@/components/ui/text.module.css";
import tableStyles from "@/components/ui/Table.module.css";
import { Status } from "@/components/ui/Status";

/**
 * The inlets' lag (docs/inlets.md): per inlet, whether it is consumed, the messages waiting (in its queue,
 * failed jobs not yet taken, advisories not yet read) and how old the last stored message was. Same query as the rest of the Overview (one request);
 * nothing is shown while no inlet exists. Display only.
 */
export function InletLag() {
  const { data } = useQuery(overviewQuery());
  const inlets = data?.inlets ?? [];
  if (!data || inlets.length === 0) return null;
  const now = Date.parse(data.asOf);
  const rows = inlets.map((i) => inletLagRow(i, now));
  return (
    <section aria-labelledby="inlet-lag-title">
      <h2 className={textStyles.sectionTitle} id="inlet-lag-title">
        Inlets
      </h2>
      <Table
        caption="Inlets and their lag"
        columns={[
          "Source",
          "Kind",
          "Queue",
          "State",
          { label: "Waiting", num: true, title: "Messages waiting to be taken when the consumer last looked" },
          { label: "Last message", title: "How long after its dead-lettering the last message was stored" },
        ]}
      >
        {rows.map((r) => (
          <tr key={r.id}>
            <td>{r.source}</td>
            <td>{r.kind}</td>
            <td className="mono">{r.queue}</td>
            <td>
              <Status tone={r.state.tone}>{r.state.text}</Status>
            </td>
            <td className={tableStyles.num}>{r.waiting}</td>
            <td>{r.lastMessage}</td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
