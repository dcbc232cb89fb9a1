import Link from "next/link";
import { Status } from "@/components/ui/Status";
import type { ReadinessCheck } from "@/lib/replay/schema";
import styles from "./replay.module.css";

const TONE = { pass: "ok", fail: "error", warn: "warn" } as const;
const WORD = { pass: "ok", fail: "fails", warn: "warning" } as const;

/**
 * The preflight's readiness checks (permission, destination, signing secret, reachability), each with what
 * was found and, when it fails, who can fix it and how, with a link to where they do it. Display only.
 */
export function ReadinessChecks({ checks }: { checks: readonly ReadinessCheck[] }) {
  return (
    <ul className={styles.checks} aria-label="Readiness checks">
      {checks.map((c) => (
        <li key={c.check} data-check={c.check} data-state={c.state}>
          <Status tone={TONE[c.state]}>{WORD[c.state]}</Status> <strong>{c.label}</strong>: {c.detail}
          {c.fix && (
            <p className={styles.fix}>
              <strong>Who can fix it: {c.fix.who}.</strong> {c.fix.action}{" "}
              {c.fix.href && (
                <Link href={c.fix.href} prefetch={false}>
                  Open {c.fix.href.startsWith("/users") ? "Users" : "the source's settings"}
                </Link>
              )}
            </p>
          )}
        </li>
      ))}
    </ul>
  );
}
