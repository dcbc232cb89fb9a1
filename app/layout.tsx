import type { Metadata } from "next";
import type { ReactNode } from "react";

export const metadata: Metadata = { title: "Keyward", description: "Webhook idempotency keys, audit and safe replay" };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>{children}</body>
    </html>
  );
}
