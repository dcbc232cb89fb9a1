import { CommandBlock } from "@/components/ui/CommandBlock";
import styles from "./auth.module.css";

/** A fresh install: no admin exists, so no one can sign in until one is created on the server. */
export function FirstRunPanel() {
  return (
    <section aria-labelledby="first-run-title">
      <h1 className={styles.title} id="first-run-title">
        Create the first admin
      </h1>
      <p>
        This Keyward has no admin account yet, so no one can sign in. Accounts are never created from this page: create
        the first admin on the server, in the directory Keyward runs from (with the same <code>DATABASE_URL</code>):
      </p>
      <CommandBlock command="npx keyward user create <name> --role admin" />
      <p className="muted">
        It asks for a password, or prints a generated one once. Then reload this page and sign in; the admin creates
        everyone else&apos;s account under Users.
      </p>
    </section>
  );
}
