import { Field } from "./TextField";

/**
 * A labelled <select> of plain string options for the console's filter forms, uncontrolled (read from
 * the form on submit), with a first "any" option whose value is empty.
 */
export function SelectField({
  id,
  name,
  label,
  options,
  emptyLabel,
  defaultValue,
}: {
  id: string;
  name: string;
  label: string;
  options: readonly string[];
  emptyLabel: string;
  defaultValue: string | undefined;
}) {
  return (
    <Field id={id} label={label}>
      <select className="input" id={id} name={name} defaultValue={defaultValue ?? ""}>
        <option value="">{emptyLabel}</option>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </Field>
  );
}
