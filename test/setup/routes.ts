/**
 * The routes under app/api, found on disk (never listed by hand): each exported handler with its URL
 * pattern, method and declared access. Shared by the access matrix (test/http/route-matrix.system.test.ts) and
 * the fuzz campaign (test/http/fuzz.system.test.ts), so a new route is covered by both without being added to either.
 */
import { readdirSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./server";

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
/** Methods Next would also route to an export; they must declare access too if ever exported. */
export const ALL_HANDLER_EXPORTS = [...HTTP_METHODS, "HEAD", "OPTIONS"];

/** A harmless value for each dynamic segment, naming nothing that exists. */
export const SAMPLE_SEGMENTS: Record<string, string> = {
  "[source]": "matrix-no-such-source",
  "[name]": "matrix-no-such-source",
  "[eventId]": "evt-matrix-1",
  "[username]": "matrix-nobody",
  "[id]": "matrix-no-such-key",
  "[deadLetterId]": "matrix-no-such-letter",
  "[...all]": "sign-in/oauth2",
  "[[...path]]": "v1/no-such-endpoint",
};

export type RouteExport = { file: string; urlPattern: string; method: string; access: unknown };

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

/** The pattern's URL with each dynamic segment replaced by `values[segment]` (percent-encoded), else its sample. */
export function concretePath(pattern: string, values: Record<string, string> = {}): string {
  return pattern
    .split("/")
    .map((seg) => {
      if (!seg.startsWith("[")) return seg;
      const sample = values[seg] ?? SAMPLE_SEGMENTS[seg];
      if (sample === undefined) throw new Error(`no sample value for the dynamic segment ${seg} in ${pattern}: add one to SAMPLE_SEGMENTS`);
      return sample.split("/").map(encodeURIComponent).join("/");
    })
    .join("/");
}

/** The dynamic segments of a pattern, in order (`[source]`, `[...all]`, …). */
export const dynamicSegments = (pattern: string) => pattern.split("/").filter((s) => s.startsWith("["));

/** The route exports under `dir` (default app/api; the access matrix also walks app/metrics). */
export async function discoverExports(dir = "app/api"): Promise<RouteExport[]> {
  const out: RouteExport[] = [];
  for (const file of routeFiles(path.join(ROOT, dir)).sort()) {
    const mod = (await import(file)) as Record<string, unknown>;
    for (const method of ALL_HANDLER_EXPORTS) {
      const fn = mod[method];
      if (fn === undefined) continue;
      out.push({ file: path.relative(ROOT, file), urlPattern: urlPatternOf(file), method, access: (fn as { access?: unknown }).access });
    }
  }
  return out;
}

export const routeLabel = (r: { method: string; urlPattern: string }) => `${r.method} ${r.urlPattern}`;

/**
 * The OpenAPI path of a Next pattern, written out here independently of lib/openapi/document.ts:
 * `[name]`, `[...all]` and `[[...path]]` become `{name}`, `{all}`, `{path}`.
 */
export const openApiPathOf = (pattern: string) =>
  pattern
    .split("/")
    .map((s) => (s.startsWith("[") ? `{${s.replace(/^\[+(\.\.\.)?/, "").replace(/\]+$/, "")}}` : s))
    .join("/");

/** A route export with a concrete path to call (every dynamic segment given its sample), for walks over every route. */
export type ApiRoute = RouteExport & { path: string };

export async function discoverApiRoutes(): Promise<ApiRoute[]> {
  return (await discoverExports())
    .filter((r) => (HTTP_METHODS as readonly string[]).includes(r.method))
    .map((r) => ({ ...r, path: concretePath(r.urlPattern) }));
}
