/**
 * Structured JSON logs: one line per event on stderr, `{time, level, msg, ...fields}`.
 * Callers pass namespace/name as fields; never pass key material, tokens or response bodies.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(
  base: Record<string, unknown> = {},
  opts: { level?: LogLevel; write?: (line: string) => void } = {},
): Logger {
  const min = order[opts.level ?? (process.env.AGENTCARD_LOG_LEVEL as LogLevel | undefined) ?? 'info'] ?? 20;
  const write = opts.write ?? ((line: string) => process.stderr.write(line));
  const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (order[level] < min) return;
    write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...base, ...fields }) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger({ ...base, ...fields }, opts),
  };
}
