/**
 * Errors from the API server, reduced to what is safe and useful to show: the HTTP status and the
 * server's Status message. (The client's own error text embeds response headers and bodies.)
 */
export function apiStatusCode(err: unknown): number | undefined {
  if (err && typeof err === 'object') {
    const e = err as { code?: unknown; statusCode?: unknown };
    if (typeof e.code === 'number') return e.code;
    if (typeof e.statusCode === 'number') return e.statusCode;
  }
  return undefined;
}

export function isNotFound(err: unknown): boolean {
  return apiStatusCode(err) === 404;
}

export function isConflict(err: unknown): boolean {
  return apiStatusCode(err) === 409;
}

/** One line: `HTTP 404: secrets "x" not found`, or the error's first line for non-API errors. */
export function describeApiError(err: unknown): string {
  const code = apiStatusCode(err);
  if (code !== undefined && err && typeof err === 'object') {
    const body = (err as { body?: unknown }).body;
    let message: string | undefined;
    if (typeof body === 'string') {
      try {
        const parsed = JSON.parse(body) as { message?: unknown };
        if (typeof parsed.message === 'string') message = parsed.message;
      } catch {
        // not a Status object
      }
    } else if (
      body &&
      typeof body === 'object' &&
      typeof (body as { message?: unknown }).message === 'string'
    ) {
      message = (body as { message: string }).message;
    }
    return `HTTP ${code}${message ? `: ${message.split('\n', 1)[0]!.slice(0, 300)}` : ''}`;
  }
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n', 1)[0]!.slice(0, 300);
}
