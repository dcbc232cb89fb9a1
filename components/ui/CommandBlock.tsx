import { CopyButton } from "./CopyButton";
import commandStyles from "./CommandBlock.module.css";

/** A shell command to run, with a copy button. */
export function CommandBlock({ command }: { command: string }) {
  return (
    <div className={commandStyles.command}>
      <pre className={commandStyles.text}>
        <code>{command}</code>
      </pre>
      <CopyButton text={command} label={`Copy: ${command}`} />
    </div>
  );
}
