import Link from "next/link";
import type { ReactNode } from "react";
import { ConsoleNav } from "@/components/ui/ConsoleNav";

/** The console shell: brand, navigation between the screens, and the page. */
export default function ConsoleLayout({ children }: { children: ReactNode }) {
  return (
    <div className="shell">
      <header className="topbar">
        <div className="topbar__inner">
          <Link href="/" className="brand">
            Keyward
          </Link>
          <ConsoleNav />
        </div>
      </header>
      <main className="content">{children}</main>
    </div>
  );
}
