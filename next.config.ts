import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // Database drivers and the embedded engine stay plain Node modules, never bundled.
  serverExternalPackages: ["pg", "@prisma/adapter-pg", "@electric-sql/pglite", "@electric-sql/pglite-socket"],
  poweredByHeader: false,
};

export default nextConfig;
