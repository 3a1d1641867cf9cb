/**
 * An error caused by the user's input (a file, a flag, a manifest, a key). Its message is one
 * line that names the problem and is safe to show: it never carries key material or tokens.
 * The CLI prints it without a stack trace; the controller turns it into a condition message.
 */
export class UserError extends Error {
  override name = 'UserError';
  /** Process exit code the CLI uses for this error (1: invalid input, 2: usage). */
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

/** A short, single-line description of any thrown value, for logs and user-facing messages. */
export function describeError(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n', 1)[0]!.slice(0, 500);
}
