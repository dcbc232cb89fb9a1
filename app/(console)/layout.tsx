import Link from "next/link";
import type { ReactNode } from "react";
import { SessionProvider } from "@/components/auth/SessionProvider";
import { UserMenu } from "@/components/auth/UserMenu";
import { ConsoleNav } from "@/components/ui/ConsoleNav";
import { GlobalSearch } from "@/components/search/GlobalSearch";
import { requireUser } from "@/lib/auth/pages";
import styles from "./layout.module.css";
import textStyles from "@/components/ui/text.module.css";

/** The console shell for signed-in people (anyone else goes to /sign-in): brand, navigation, user, page. */
export default async function ConsoleLayout({ children }: { children: ReactNode }) {
  const { username, name, role, capabilities } = await requireUser();
  return (
    <SessionProvider user={{ username, name, role, capabilities }}>
      <div>
        <header className={styles.topbar}>
          <div className={styles.topbarInner}>
            <Link href="/" className={textStyles.brand}>
              Keyward
            </Link>
            <ConsoleNav />
            <GlobalSearch />
            <UserMenu />
          </div>
        </header>
        <main className={styles.content}>{children}</main>
      </div>
    </SessionProvider>
  );
}
