"use client";

import { Field } from "@/components/ui/TextField";
import formStyles from "@/components/ui/forms.module.css";
import { REPLAY_OUTCOMES, REPLAY_STATES } from "@/lib/replay/outcome";
import type { ReplayListFilter } from "./queries";

const LABELS: Record<string, string> = {
  running: "Running or paused",
  finished: "Finished (any outcome)",
  succeeded: "Succeeded",
  partial: "Partial",
  failed: "Failed",
  cancelled: "Cancelled",
};

/** The replays list's filter: by state (running, finished) or by how a finished one ended (GET /api/v1/replays?state|outcome). Applies on change. */
export function ReplayListFilterField({ filter, onChange }: { filter: ReplayListFilter; onChange: (f: ReplayListFilter) => void }) {
  const value = filter.outcome ?? filter.state ?? "";
  return (
    <form className={formStyles.filters} aria-label="Filter replays" onSubmit={(e) => e.preventDefault()}>
      <Field id="replay-outcome" label="Outcome">
        <select
          className="input"
          id="replay-outcome"
          name="outcome"
          value={value}
          onChange={(e) => {
            const v = e.currentTarget.value;
            if ((REPLAY_OUTCOMES as readonly string[]).includes(v)) onChange({ outcome: v as ReplayListFilter["outcome"] });
            else if ((REPLAY_STATES as readonly string[]).includes(v)) onChange({ state: v as ReplayListFilter["state"] });
            else onChange({});
          }}
        >
          <option value="">Any replay</option>
          <optgroup label="State">
            {REPLAY_STATES.map((s) => (
              <option key={s} value={s}>
                {LABELS[s]}
              </option>
            ))}
          </optgroup>
          <optgroup label="How it ended">
            {REPLAY_OUTCOMES.map((o) => (
              <option key={o} value={o}>
                {LABELS[o]}
              </option>
            ))}
          </optgroup>
        </select>
      </Field>
    </form>
  );
}
