/**
 * The readable output of `agentcard discover`: one row per card (and per failure), then what
 * went wrong under each row, then a summary. Pure: a report in, text out.
 */
import { formatProblem } from '../card/problem.ts';
import { entryDisplayName } from '../catalog/document.ts';
import { shorten } from './plan.ts';
import type { CardReport, DiscoverReport } from './report.ts';

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

function signatureCell(card: CardReport): string {
  const s = card.signature;
  if (s.status !== 'verified') return s.status;
  return s.identity ? `verified ${s.identity}` : `verified ${s.kid}`;
}

function interfacesCell(card: CardReport): string {
  const total = card.interfaces.length;
  const probed = card.interfaces.filter((i) => i.probe && i.probe.reason !== 'Unsupported');
  if (!card.interfaces.some((i) => i.probe)) return String(total);
  return `${probed.filter((i) => i.probe!.reachable).length}/${probed.length} up`;
}

function cardName(card: CardReport): string {
  const name = card.entry ? entryDisplayName(card.entry, card.name) : card.name;
  return shorten(name ?? '(no name)', 40);
}

/** Lines under a card's row: what failed, then warnings. */
function details(card: CardReport): string[] {
  const out: string[] = [];
  if (card.signature.status !== 'verified')
    out.push(`signature ${card.signature.status}: ${card.signature.message}`);
  else if (card.signature.canonicalization === 'defaults-omitted')
    out.push(`note: ${card.signature.message}`);
  // The trust manifest's verdict is said either way: it names who vouches for the listing.
  if (card.trustManifest)
    out.push(
      card.trustManifest.status === 'verified'
        ? card.trustManifest.message
        : `trust manifest ${card.trustManifest.status}: ${card.trustManifest.message}`,
    );
  const origin = card.entry?.origin;
  if (origin)
    out.push(
      `imported from ${origin.cluster ?? 'another cluster'} (${origin.catalog}), signer verified there: ${origin.signer}`,
    );
  for (const p of card.problems.filter((p) => p.severity === 'error'))
    out.push(`invalid: ${formatProblem(p)}`);
  for (const i of card.interfaces) {
    if (i.probe && !i.probe.reachable && i.probe.reason !== 'Unsupported') {
      out.push(`probe ${i.probe.reason}: ${i.protocolBinding} ${i.url}: ${i.probe.message}`);
    }
  }
  const warnings = card.problems.filter((p) => p.severity === 'warning').length;
  if (warnings) out.push(`${warnings} lint warning${warnings === 1 ? '' : 's'} (see --output json)`);
  return out.map((line) => shorten(line, 300));
}

export function formatTable(report: DiscoverReport): string {
  const rows: string[][] = [['STATUS', 'NAME', 'VERSION', 'SIGNATURE', 'INTERFACES', 'SOURCE']];
  const notes = new Map<number, string[]>();
  for (const card of report.cards) {
    notes.set(rows.length, details(card));
    rows.push([
      card.ok ? 'ok' : 'FAIL',
      cardName(card),
      shorten(card.version ?? '-', 16),
      signatureCell(card),
      interfacesCell(card),
      card.source,
    ]);
  }
  for (const error of report.errors) {
    notes.set(rows.length, [
      `${error.code}: ${error.message}`,
      ...(error.via.length ? [`via ${error.via.join(' -> ')}`] : []),
    ]);
    rows.push(['ERROR', '-', '-', '-', '-', error.url]);
  }
  const lines: string[] = [];
  if (rows.length > 1) {
    table(rows).forEach((line, i) => {
      lines.push(line);
      for (const note of notes.get(i) ?? []) lines.push(`      ${note}`);
    });
  }
  const verified = report.cards.filter((c) => c.ok).length;
  const catalogs = report.catalogs.length;
  const parts = [
    `${report.cards.length} card${report.cards.length === 1 ? '' : 's'}, ${verified} ok`,
    `${catalogs} catalog${catalogs === 1 ? '' : 's'}`,
    `${report.errors.length} error${report.errors.length === 1 ? '' : 's'}`,
  ];
  if (report.filteredOut) parts.push(`${report.filteredOut} filtered out`);
  lines.push(parts.join(', '));
  return lines.join('\n') + '\n';
}
