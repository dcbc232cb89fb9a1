/**
 * Client side of the overview: query keys and react-query options. The response is checked against the
 * shared zod schema, so a server/console mismatch shows up as a clear error instead of NaN in a table.
 */
import { queryOptions } from "@tanstack/react-query";
import { overviewSchema, type Overview } from "./schema";

/** How often the console re-reads the figures while the tab is visible. */
export const OVERVIEW_REFRESH_MS = 10_000;

/** A failed console API call, carrying the one error body `{ error: { code, message } }` when there is one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

// Kept here until a second screen needs it; then it moves to a shared client module (lib/http/client.ts).
async function getJson(path: string, signal?: AbortSignal): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(path, { signal, headers: { accept: "application/json" }, cache: "no-store" });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new ApiError(0, "network_error", "the Keyward server did not answer (is it running?)");
  }
  const body: unknown = await res.json().catch(() => undefined);
  if (!res.ok) {
    const e = (body as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new ApiError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? `${res.status} ${res.statusText}`);
  }
  return body;
}

export const overviewKeys = {
  all: ["overview"] as const,
  live: () => [...overviewKeys.all, "live"] as const,
};

export function overviewQuery() {
  return queryOptions({
    queryKey: overviewKeys.live(),
    queryFn: async ({ signal }): Promise<Overview> => {
      const parsed = overviewSchema.safeParse(await getJson("/api/v1/overview", signal));
      if (!parsed.success) {
        throw new ApiError(200, "unexpected_response", "the server's overview does not match this console version; reload the page");
      }
      return parsed.data;
    },
    refetchInterval: OVERVIEW_REFRESH_MS,
    // Retry what may pass on its own (network, 5xx such as 503 database_unavailable); a 4xx will not.
    retry: (failures, err) => failures < 2 && !(err instanceof ApiError && err.status >= 400 && err.status < 500),
  });
}
