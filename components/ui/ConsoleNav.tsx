"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";

const ITEMS = [
  { href: "/", label: "Overview" },
  { href: "/sources", label: "Sources" },
  { href: "/audit", label: "Audit" },
  { href: "/replay", label: "Replay" },
] as const;

function isActive(pathname: string, href: string): boolean {
  return href === "/" ? pathname === "/" : pathname === href || pathname.startsWith(`${href}/`);
}

/** The console's main navigation; marks the current screen for sighted and screen-reader users. */
export function ConsoleNav() {
  const pathname = usePathname() ?? "/";
  return (
    <nav className="nav" aria-label="Console">
      {ITEMS.map((item) => {
        const active = isActive(pathname, item.href);
        return (
          <Link
            key={item.href}
            href={item.href}
            className={active ? "nav__link nav__link--active" : "nav__link"}
            aria-current={active ? "page" : undefined}
          >
            {item.label}
          </Link>
        );
      })}
    </nav>
  );
}
