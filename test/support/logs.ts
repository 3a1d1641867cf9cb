// The operator's JSON log lines, parsed, for tests that assert on what a component said.
import { createLogger, type Logger, type LogLevel } from '../../operator/log.ts';

export function captureLogs(level: LogLevel = 'debug'): {
  lines: Array<Record<string, unknown>>;
  log: Logger;
} {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({}, { level, write: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  return { lines, log };
}
