import { ReferenceLine } from "recharts";

/** A configuration change at `t` (Grafana's annotations): a dashed vertical line with a ◆ at its top. */
export type Annotation = { t: number; label: string };

/**
 * The marks of `annotations` as recharts children (an array, so they are the chart's direct children, as
 * recharts wants), on the left axis. What each one is reads from the list under the charts (AnnotationList).
 */
export function annotationLines(annotations: readonly Annotation[]) {
  return annotations.map((a) => (
    <ReferenceLine
      key={`${a.t}-${a.label}`}
      yAxisId="left"
      x={a.t}
      stroke="var(--chart-annotation)"
      strokeDasharray="3 3"
      ifOverflow="hidden"
      label={{ value: "◆", position: "insideTop", fill: "var(--chart-annotation)", fontSize: 10 }}
    />
  ));
}
