/**
 * Errors from the API server (kube/client.ts ApiError), reduced to what is safe and useful to
 * show: the HTTP status and the server's Status message.
 */
import { ApiError } from './client.ts';

export function apiStatusCode(err: unknown): number | undefined {
  return err instanceof ApiError ? err.statusCode : undefined;
}

export function isNotFound(err: unknown): boolean {
  return apiStatusCode(err) === 404;
}

export function isConflict(err: unknown): boolean {
  return apiStatusCode(err) === 409;
}

/** One line: `HTTP 404: secrets "x" not found`, or the error's first line for other errors. */
export function describeApiError(err: unknown): string {
  if (err instanceof ApiError) {
    const message = err.body?.message;
    return `HTTP ${err.statusCode}${message ? `: ${message.split('\n', 1)[0]!.slice(0, 300)}` : ''}`;
  }
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n', 1)[0]!.slice(0, 300);
}
