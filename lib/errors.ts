/**
 * The one error type. Domain code throws it; the route wrapper turns it into
 * `{ "error": { "code", "message", "details"? } }` with its status, and the CLI prints its message.
 */
export class KeywardError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = "KeywardError";
  }

  static badRequest(code: string, message: string, details?: unknown) {
    return new KeywardError(400, code, message, details);
  }
  static unauthorized(message = "missing or invalid API key") {
    return new KeywardError(401, "unauthorized", message);
  }
  static forbidden(message: string) {
    return new KeywardError(403, "forbidden", message);
  }
  static notFound(code: string, message: string, details?: unknown) {
    return new KeywardError(404, code, message, details);
  }
  static conflict(code: string, message: string, details?: unknown) {
    return new KeywardError(409, code, message, details);
  }
  static unprocessable(code: string, message: string, details?: unknown) {
    return new KeywardError(422, code, message, details);
  }
  static unavailable(message: string) {
    return new KeywardError(503, "database_unavailable", message);
  }
}
