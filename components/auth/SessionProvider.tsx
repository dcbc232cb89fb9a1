"use client";

import { createContext, useContext, type ReactNode } from "react";
import { hasCapability, type Capability, type Role } from "@/lib/auth/roles";

/** The signed-in person as the console's client components see them (read server-side by the layout). */
export type SessionUser = { username: string; name: string; role: Role; capabilities: Capability[] };

const SessionContext = createContext<SessionUser | null>(null);

export function SessionProvider({ user, children }: { user: SessionUser; children: ReactNode }) {
  return <SessionContext.Provider value={user}>{children}</SessionContext.Provider>;
}

/** The signed-in user. Only inside the console layout, which always provides one. */
export function useSession(): SessionUser {
  const user = useContext(SessionContext);
  if (!user) throw new Error("useSession() used outside the console layout's SessionProvider");
  return user;
}

/**
 * Whether the signed-in user may do something, by the same rule the server applies (lib/auth/roles.ts).
 * For hiding what they may not do; the server refuses it anyway.
 */
export function useCan(capability: Capability): boolean {
  return hasCapability(useSession().capabilities, capability);
}
