"use client";

import { useQuery } from "@tanstack/react-query";
import { overviewQuery } from "./queries";
import { inletLagRow } from "./inlet-lag";

/**
 * The RabbitMQ inlets' lag (docs/inlets.md): per inlet, whether it is consumed, the messages waiting in
 * its queue and how old the last stored message was. Same query as the rest of the Overview (one request);
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
      <h2 className="section-title" id="inlet-lag-title">
        RabbitMQ inlets
      </h2>
      <div className="table-wrap">
        <table className="table">
          <caption className="visually-hidden">RabbitMQ inlets and their lag</caption>
          <thead>
            <tr>
              <th scope="col">Source</th>
              <th scope="col">Queue</th>
              <th scope="col">State</th>
              <th scope="col" className="num" title="Messages ready in the queue when the consumer last looked">
                Waiting
              </th>
              <th scope="col" title="How long after its dead-lettering the last message was stored">
                Last message
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id}>
                <td>{r.source}</td>
                <td className="mono">{r.queue}</td>
                <td>
                  <span className={`status status--${r.state.tone}`}>{r.state.text}</span>
                </td>
                <td className="num">{r.waiting}</td>
                <td>{r.lastMessage}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
