"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { Activity, Bell, KeyRound, LayoutDashboard, RotateCcw, ScrollText, Users, Webhook, type LucideIcon } from "lucide-react";
import { useSession } from "@/components/auth/SessionProvider";
import { hasCapability, type Capability } from "@/lib/auth/roles";
import { Icon } from "./Icon";
import styles from "./ConsoleNav.module.css";

/** The screens, and the capability each needs (the page refuses by the same rule; this only hides the link). */
const ITEMS: { href: string; label: string; icon: LucideIcon; needs?: Capability }[] = [
  { href: "/", label: "Overview", icon: LayoutDashboard },
  { href: "/sources", label: "Sources", icon: Webhook },
  { href: "/audit", label: "Audit", icon: ScrollText },
  { href: "/replay", label: "Replay", icon: RotateCcw },
  { href: "/activity", label: "Activity", icon: Activity, needs: "operator" },
  { href: "/notifications", label: "Notifications", icon: Bell },
  { href: "/users", label: "Users", icon: Users, needs: "admin" },
  { href: "/api-keys", label: "API keys", icon: KeyRound, needs: "admin" },
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
            <Icon icon={item.icon} />
            {item.label}
          </Link>
        );
      })}
    </nav>
  );
}
