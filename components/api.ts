/**
 * The console's one way to call its own API from the browser: JSON in and out, the one error body
 * `{ error: { code, message, details? } }` (or a network failure) turned into an ApiError, and the retry
 * rule every screen's queries share. Plain same-origin fetches: the browser sends the session cookie and,
 * on changes, the Origin header the server's CSRF check wants.
 */
import type { z } from "zod";

/**
 * A failed console API call, carrying the one error body when there is one (`details.fields` on a 422:
 * which request field was refused, and why).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/**
 * A server type as the API sends it through JSON: dates become ISO text. The console's answer types are
 * the server's own (`AsJson<UserInfo>`), so a field added or renamed there reaches the screens' types.
 */
export type AsJson<T> = T extends Date
  ? string
  : T extends readonly (infer U)[]
    ? AsJson<U>[]
    : T extends object
      ? { [K in keyof T]: AsJson<T[K]> }
      : T;

type Method = "GET" | "POST" | "PATCH" | "DELETE";

export async function api<T>(
  path: string,
  init: { method?: Method; body?: unknown; signal?: AbortSignal; headers?: Record<string, string> } = {},
): Promise<T> {
  const headers: Record<string, string> = { ...init.headers, accept: "application/json" };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(path, {
      method: init.method ?? "GET",
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: init.signal,
      cache: "no-store",
    });
  } catch (err) {
    if (init.signal?.aborted) throw err;
    throw new ApiError(0, "network_error", "the Keyward server did not answer (is it running?)");
  }
  const body: unknown = await res.json().catch(() => undefined);
  if (!res.ok) {
    const e = (body as { error?: { code?: string; message?: string; details?: unknown } } | undefined)?.error;
    throw new ApiError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? `${res.status} ${res.statusText}`, e?.details);
  }
  return body as T;
}

/**
 * A call (a GET, or a change with `init`) whose answer is checked against the shared zod schema, so a server/console mismatch shows up as
 * a clear error instead of NaN in a table.
 */
export async function apiParsed<T>(
  path: string,
  schema: z.ZodType<T>,
  /** What the error says when the answer does not match, e.g. "the server's overview does not match …". */
  mismatch: string,
  signal?: AbortSignal,
  /** A change (POST …) whose answer is checked too. */
  init: { method?: Method; body?: unknown; headers?: Record<string, string> } = {},
): Promise<T> {
  const parsed = schema.safeParse(await api<unknown>(path, { ...init, signal }));
  if (!parsed.success) throw new ApiError(200, "unexpected_response", `${mismatch}; reload the page`);
  return parsed.data;
}

/** Retry what may pass on its own (network, 5xx such as 503 database_unavailable); a 4xx will not. */
export function retryUnlessClientError(failures: number, err: unknown): boolean {
  return failures < 2 && !(err instanceof ApiError && err.status >= 400 && err.status < 500);
}

/** Whether an error means the session is gone (signed out elsewhere, role changed, disabled). */
export function isSessionEnded(err: unknown): boolean {
  return err instanceof ApiError && err.status === 401;
}
