import type { ReactNode } from "react";

/** The page people see before they are signed in: the brand and one card, no navigation. */
export default function SignInLayout({ children }: { children: ReactNode }) {
  return (
    <div className="auth-shell">
      <main className="auth-card">
        <p className="brand auth-card__brand">Keyward</p>
        {children}
      </main>
    </div>
  );
}
