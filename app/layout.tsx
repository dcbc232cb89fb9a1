import type { Metadata } from "next";
import type { ReactNode } from "react";
import { DemoBanner } from "@/components/ui/DemoBanner";
import { Providers } from "./providers";
import "./globals.css";

// Every page is rendered per request: each response carries its own CSP nonce (lib/server/start.ts),
// which Next can only put on the scripts of a page it renders then.
export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: { default: "Keyward", template: "%s · Keyward" },
  description: "Webhook idempotency keys, audit and safe replay",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <DemoBanner />
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
