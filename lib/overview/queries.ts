/**
 * Client side of the overview: query keys and react-query options. The response is checked against the
 * shared zod schema, so a server/console mismatch shows up as a clear error instead of NaN in a table.
 */
import { queryOptions } from "@tanstack/react-query";
import { ApiError, getJson, retryUnlessClientError } from "../http/client";
import { overviewSchema, type Overview } from "./schema";

/** How often the console re-reads the figures while the tab is visible. */
export const OVERVIEW_REFRESH_MS = 10_000;

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
    retry: retryUnlessClientError,
  });
}
