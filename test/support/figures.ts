/**
 * Figures a fault test observed (time to converge, writes, request rates), printed on stderr and,
 * when AGENTCARD_FAULT_FIGURES names a file, appended to it as one JSON line each, so that
 * docs/RELIABILITY.md can quote what a run measured.
 */
import { appendFileSync } from 'node:fs';

export function recordFigure(test: string, figures: Record<string, unknown>): void {
  const line = JSON.stringify({ test, at: new Date().toISOString(), ...figures });
  process.stderr.write(`[figures] ${line}\n`);
  const file = process.env.AGENTCARD_FAULT_FIGURES;
  if (file) appendFileSync(file, `${line}\n`);
}
