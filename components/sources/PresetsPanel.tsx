import { formatDuration } from "@/lib/sources/duration";
import { ttlEquation } from "./describe";
import type { PresetItem } from "./queries";
import styles from "./sources.module.css";
import { Table } from "@/components/ui/Table";
import { clsx } from "clsx";
import tableStyles from "@/components/ui/Table.module.css";
import panelStyles from "@/components/ui/Panel.module.css";
import textStyles from "@/components/ui/text.module.css";

/** The TTL presets, collapsed: each one's TTL, parts, what it assumes of the sender and where that comes from. */
export function PresetsPanel({ presets }: { presets: PresetItem[] }) {
  return (
    <details className={clsx(panelStyles.panel, styles.presets)}>
      <summary className={styles.presetsSummary}>
        <h2 className={clsx(textStyles.sectionTitle, styles.inlineTitle)}>Presets ({presets.length})</h2>
        <span className="muted small"> what each assumes, and where its figures come from</span>
      </summary>
      <Table
        caption="TTL presets"
        columns={[
          "Preset",
          { label: "TTL", num: true },
          { label: "Parts", title: "retry window + queue lag + clock skew + replay margin" },
          "Assumes",
          "Source",
        ]}
        wrap
      >
        {presets.map((p) => (
          <tr key={p.name}>
            <th scope="row">
              <code>{p.name}</code>
              <div className="muted small">{p.label}</div>
            </th>
            <td className={clsx(tableStyles.num, tableStyles.strong)}>{formatDuration(p.ttlSeconds)}</td>
            <td className={clsx("mono", tableStyles.nowrap)}>{ttlEquation(p.parts)}</td>
            <td>{p.assumes}</td>
            <td className="small">{p.source}</td>
          </tr>
        ))}
      </Table>
    </details>
  );
}
