import { CopyButton } from "./CopyButton";

/** A shell command to run, with a copy button. */
export function CommandBlock({ command }: { command: string }) {
  return (
    <div className="command">
      <pre className="command__text">
        <code>{command}</code>
      </pre>
      <CopyButton text={command} label={`Copy: ${command}`} />
    </div>
  );
}
