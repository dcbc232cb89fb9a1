import type { NextConfig } from "next";
import { API_HEADERS } from "./lib/http/headers";

const nextConfig: NextConfig = {
  // Database drivers and the embedded engine stay plain Node modules, never bundled.
  serverExternalPackages: ["pg", "@prisma/adapter-pg", "@electric-sql/pglite"],
  poweredByHeader: false,
  async headers() {
    return [{ source: "/api/:path*", headers: API_HEADERS.map(([key, value]) => ({ key, value })) }];
  },
};

export default nextConfig;
