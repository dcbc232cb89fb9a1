"use client";

import { useId, type ReactNode } from "react";
import { CopyButton } from "./CopyButton";
import { clsx } from "clsx";
import commandStyles from "./CommandBlock.module.css";
import styles from "./SecretPanel.module.css";

/**
 * A secret the server returns exactly once (a new API key, a generated password, a signing secret):
 * shown with a copy button and a plain warning, until dismissed. It lives only in this component's props;
 * a reload loses it.
 */
export function SecretPanel({
  title,
  secret,
  stored,
  children,
  onDismiss,
}: {
  title: string;
  secret: string;
  /**
   * How the server keeps it: API keys and passwords only as a hash; a signing secret encrypted, since
   * replays need it in clear to sign (lib/sources/signing-secret.ts).
   */
  stored: "hash" | "encrypted";
  /** What the secret is for and where it goes. */
  children?: ReactNode;
  onDismiss: () => void;
}) {
  const id = useId();
  return (
    <section className={styles.secret} aria-labelledby={`${id}-title`}>
      <h2 className={styles.title} id={`${id}-title`}>
        {title}
      </h2>
      <p className={styles.warning}>
        <strong>Shown once.</strong> Copy it now and store it somewhere safe:{" "}
        {stored === "hash"
          ? "Keyward keeps only a hash and cannot show it again."
          : "Keyward stores it encrypted to sign replays, and never shows it again."}
      </p>
      <div className={commandStyles.command}>
        <pre className={clsx(commandStyles.text, styles.value)} data-testid="secret-value">
          <code>{secret}</code>
        </pre>
        <CopyButton text={secret} label={`Copy ${title}`} />
      </div>
      {children}
      <button type="button" className="button" onClick={onDismiss}>
        I have stored it, hide it
      </button>
    </section>
  );
}
