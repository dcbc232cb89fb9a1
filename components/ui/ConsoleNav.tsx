"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { useSession } from "@/components/auth/SessionProvider";
import { hasCapability, type Capability } from "@/lib/auth/roles";
import styles from "./ConsoleNav.module.css";

/** The screens, and the capability each needs (the page refuses by the same rule; this only hides the link). */
const ITEMS: { href: string; label: string; needs?: Capability }[] = [
  { href: "/", label: "Overview" },
  { href: "/sources", label: "Sources" },
  { href: "/audit", label: "Audit" },
  { href: "/replay", label: "Replay" },
  { href: "/activity", label: "Activity", needs: "operator" },
  { href: "/users", label: "Users", needs: "admin" },
  { href: "/api-keys", label: "API keys", needs: "admin" },
];

function isActive(pathname: string, href: string): boolean {
  return href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`);
}

/** The console's main navigation; marks the current screen for sighted and screen-reader users. */
export function ConsoleNav() {
  const pathname = usePathname() ?? "/";
  const { capabilities } = useSession();
  return (
    <nav className={styles.nav} aria-label="Console">
      {ITEMS.filter((item) => !item.needs || hasCapability(capabilities, item.needs)).map((item) => {
        const active = isActive(pathname, item.href);
        return (
          <Link
            key={item.href}
            href={item.href}
            className={active ? `${styles.link} ${styles.active}` : styles.link}
            aria-current={active ? "page" : undefined}
          >
            {item.label}
          </Link>
        );
      })}
    </nav>
  );
}
