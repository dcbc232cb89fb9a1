import type { NextConfig } from "next";
import { API_HEADERS } from "./lib/http/headers";

const nextConfig: NextConfig = {
  // Database drivers stay plain Node modules, never bundled.
  serverExternalPackages: ["pg", "@prisma/adapter-pg"],
  poweredByHeader: false,
  // No type checking in `next build`: it is what a user's first `npm start` waits for (about 40 s of a
  // 100 s first start). Types are checked in CI instead (`npm run typecheck`, .ci/run), where a type error
  // fails the run; the build itself still fails on a syntax error.
  typescript: { ignoreBuildErrors: true },
  // Nor Turbopack's persistent build cache: writing it took 25–35 s of a first start (measured on a fresh
  // clone: 114 s with it, 50 s without), and it only pays back when the sources change between builds,
  // which a user's installation never does (developers use `next dev`).
  experimental: { turbopackFileSystemCacheForBuild: false },
  async headers() {
    const headers = API_HEADERS.map(([key, value]) => ({ key, value }));
    // The health probes answer like the API (lib/health/http.ts); the fast path serves them the same way.
    return ["/api/:path*", "/healthz", "/readyz"].map((source) => ({ source, headers }));
  },
};

export default nextConfig;
