/**
 * Where a V8 heap snapshot's memory goes: self size and count per constructor (or node type),
 * largest first. Reads the `.heapsnapshot` JSON that `--heapsnapshot-signal` writes.
 *
 *   node bench/heap-summary.ts FILE [TOP]
 */
import { readFileSync } from 'node:fs';

/** The parts of a `.heapsnapshot` these tools read (heap-retained.ts reads the edges too). */
export interface HeapSnapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export function readHeapSnapshot(file: string): HeapSnapshot {
  return JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshot;
}

export interface HeapRow {
  name: string;
  count: number;
  selfBytes: number;
}

export function summarizeHeapSnapshot(file: string): { total: number; rows: HeapRow[] } {
  const snap = readHeapSnapshot(file);
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const byName = new Map<string, HeapRow>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]!]!;
    const size = snap.nodes[i + sizeAt]!;
    total += size;
    // Objects and closures by constructor name; everything else (strings, arrays, code) by type.
    const name =
      type === 'object' || type === 'closure'
        ? `${type} ${snap.strings[snap.nodes[i + nameAt]!]}`
        : `(${type})`;
    const row = byName.get(name) ?? { name, count: 0, selfBytes: 0 };
    row.count++;
    row.selfBytes += size;
    byName.set(name, row);
  }
  return { total, rows: [...byName.values()].sort((a, b) => b.selfBytes - a.selfBytes) };
}

if (process.argv[1] === import.meta.filename) {
  const [file, top = '25'] = process.argv.slice(2);
  if (!file) throw new Error('usage: node bench/heap-summary.ts FILE [TOP]');
  const { total, rows } = summarizeHeapSnapshot(file);
  process.stdout.write(`total ${(total / 2 ** 20).toFixed(1)} MiB\n`);
  for (const r of rows.slice(0, Number(top)))
    process.stdout.write(
      `${(r.selfBytes / 2 ** 20).toFixed(2).padStart(8)} MiB ${String(r.count).padStart(8)}  ${r.name}\n`,
    );
}
