/**
 * The console's side of the API: a JSON GET that turns the one error body `{ error: { code, message } }`
 * (or a network failure) into an ApiError, and the retry rule the screens' queries share.
 */

/**
 * A failed console API call, carrying the one error body `{ error: { code, message, details? } }` when there
 * is one (`details.fields` on a 422: which request field was refused, and why).
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

export async function getJson(path: string, signal?: AbortSignal): Promise<unknown> {
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

/** Retry what may pass on its own (network, 5xx such as 503 database_unavailable); a 4xx will not. */
export function retryUnlessClientError(failures: number, err: unknown): boolean {
  return failures < 2 && !(err instanceof ApiError && err.status >= 400 && err.status < 500);
}
