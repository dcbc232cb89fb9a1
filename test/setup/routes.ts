/**
 * Every API route on disk (app/api/**\/route.ts) with its exported methods and a concrete path to call,
 * for tests that walk all routes (the fault matrix in test/db/faults.test.ts). Found on disk, never
 * listed by hand, so a new route is covered the day it is added.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./server";

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** A sample value for each dynamic segment (none of them needs to exist). */
export const SAMPLE_SEGMENTS: Record<string, string> = {
  "[source]": "matrix-no-such-source",
  "[name]": "matrix-no-such-source",
  "[eventId]": "evt-matrix-1",
  "[username]": "matrix-nobody",
  "[id]": "matrix-no-such-key",
  "[...all]": "sign-in/oauth2",
};

export type ApiRoute = { file: string; urlPattern: string; method: string; path: string; access: unknown };

function routeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return routeFiles(p);
    return /^route\.(ts|tsx|js|mjs)$/.test(e.name) ? [p] : [];
  });
}

/** app/api/v1/users/[username]/route.ts → /api/v1/users/[username] (route groups dropped). */
function urlPatternOf(file: string): string {
  const rel = path.relative(path.join(ROOT, "app"), path.dirname(file)).split(path.sep);
  return "/" + rel.filter((s) => !/^\(.*\)$/.test(s)).join("/");
}

function concretePath(pattern: string): string {
  return pattern
    .split("/")
    .map((seg) => {
      if (!seg.startsWith("[")) return seg;
      const sample = SAMPLE_SEGMENTS[seg];
      if (!sample) throw new Error(`no sample value for the dynamic segment ${seg} in ${pattern}: add one to SAMPLE_SEGMENTS`);
      return sample.split("/").map(encodeURIComponent).join("/");
    })
    .join("/");
}

/** Imports every route module (as the test process sees it) and lists its HTTP handlers. */
export async function discoverApiRoutes(): Promise<ApiRoute[]> {
  const out: ApiRoute[] = [];
  for (const file of routeFiles(path.join(ROOT, "app/api")).sort()) {
    const mod = (await import(file)) as Record<string, unknown>;
    const urlPattern = urlPatternOf(file);
    for (const method of HTTP_METHODS) {
      const fn = mod[method];
      if (fn === undefined) continue;
      out.push({ file: path.relative(ROOT, file), urlPattern, method, path: concretePath(urlPattern), access: (fn as { access?: unknown }).access });
    }
  }
  return out;
}
