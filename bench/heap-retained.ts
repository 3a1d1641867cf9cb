/**
 * What holds a V8 heap snapshot's memory: the objects that retain the most (their dominator
 * subtrees, as the browsers' "retained size"), and for each large Map of objects what one entry
 * retains, by property path. Where heap-summary.ts says "60 MiB of strings", this says "the
 * AgentCard cache, 4 KiB a card: 2.1 of status, 1.2 of spec".
 *
 *   node bench/heap-retained.ts FILE [TOP]
 *
 * Dominators by the iterative algorithm of Cooper, Harvey and Kennedy ("A Simple, Fast Dominance
 * Algorithm", 2001) over the snapshot's strong edges (weak and shortcut edges keep nothing alive).
 */
import { readHeapSnapshot } from './heap-summary.ts';

export interface Holder {
  /** Property names from the nearest named holder down, e.g. "cache.table". */
  path: string;
  /** "object Map", "array", "string"... */
  label: string;
  retainedBytes: number;
}

export interface EntryBreakdown {
  path: string;
  entries: number;
  retainedBytes: number;
  /** Property path within one entry → bytes an entry retains there, on average. */
  perEntry: Array<[string, number]>;
}

export function retainedHeap(
  file: string,
  top = 40,
): { total: number; holders: Holder[]; maps: EntryBreakdown[] } {
  const snap = readHeapSnapshot(file);
  const meta = snap.snapshot.meta;
  const NF = meta.node_fields.length;
  const EF = meta.edge_fields.length;
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const [typeAt, nameAt, sizeAt, edgeCountAt] = ['type', 'name', 'self_size', 'edge_count'].map((f) =>
    meta.node_fields.indexOf(f),
  ) as [number, number, number, number];
  const [edgeTypeAt, edgeNameAt, toAt] = ['type', 'name_or_index', 'to_node'].map((f) =>
    meta.edge_fields.indexOf(f),
  ) as [number, number, number];
  const { nodes, edges, strings } = snap;
  const n = nodes.length / NF;
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0, e = 0; i < n; i++) {
    firstEdge[i] = e;
    e += nodes[i * NF + edgeCountAt]! * EF;
    firstEdge[i + 1] = e;
  }
  const weak = edgeTypes.indexOf('weak');
  const shortcut = edgeTypes.indexOf('shortcut');
  const strong = (e: number) => edges[e + edgeTypeAt] !== weak && edges[e + edgeTypeAt] !== shortcut;
  const target = (e: number) => edges[e + toAt]! / NF;

  // Depth-first postorder from the root (node 0).
  const order = new Int32Array(n).fill(-1);
  const postorder = new Uint32Array(n);
  const cursor = new Uint32Array(n);
  let count = 0;
  const stack = [0];
  order[0] = -2;
  cursor[0] = firstEdge[0]!;
  while (stack.length > 0) {
    const v = stack[stack.length - 1]!;
    let descended = false;
    while (cursor[v]! < firstEdge[v + 1]!) {
      const e = cursor[v]!;
      cursor[v] = e + EF;
      if (!strong(e)) continue;
      const w = target(e);
      if (order[w] !== -1) continue;
      order[w] = -2;
      cursor[w] = firstEdge[w]!;
      stack.push(w);
      descended = true;
      break;
    }
    if (!descended) {
      stack.pop();
      order[v] = count;
      postorder[count++] = v;
    }
  }
  // Predecessors of each reachable node, by strong edges.
  const predStart = new Uint32Array(n + 1);
  const eachStrongEdge = (visit: (from: number, to: number) => void) => {
    for (let v = 0; v < n; v++) {
      if (order[v]! < 0) continue;
      for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) if (strong(e)) visit(v, target(e));
    }
  };
  eachStrongEdge((_, w) => predStart[w + 1]!++);
  for (let i = 0; i < n; i++) predStart[i + 1]! += predStart[i]!;
  const preds = new Uint32Array(predStart[n]!);
  const filled = predStart.slice();
  eachStrongEdge((v, w) => (preds[filled[w]!++] = v));
  // Immediate dominators, iterated to a fixed point in reverse postorder.
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a]! < order[b]!) a = idom[a]!;
      while (order[b]! < order[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let k = count - 1; k >= 0; k--) {
      const v = postorder[k]!;
      if (v === 0) continue;
      let dom = -1;
      for (let p = predStart[v]!; p < predStart[v + 1]!; p++) {
        const u = preds[p]!;
        if (idom[u] !== -1) dom = dom === -1 ? u : intersect(u, dom);
      }
      if (dom !== -1 && idom[v] !== dom) {
        idom[v] = dom;
        changed = true;
      }
    }
  }
  const retained = new Float64Array(n);
  for (let k = 0; k < count; k++) {
    const v = postorder[k]!;
    retained[v]! += nodes[v * NF + sizeAt]!;
    if (v !== 0) retained[idom[v]!]! += retained[v]!;
  }

  const label = (v: number) =>
    `${nodeTypes[nodes[v * NF + typeAt]!]} ${String(strings[nodes[v * NF + nameAt]!]).slice(0, 40)}`.trim();
  /** The name of the edge from `from` to `to`: a property, or [index]. */
  const edgeName = (from: number, to: number): string => {
    for (let e = firstEdge[from]!; e < firstEdge[from + 1]!; e += EF) {
      if (target(e) !== to || !strong(e)) continue;
      const type = edgeTypes[edges[e + edgeTypeAt]!];
      return type === 'element' || type === 'hidden' ? '[]' : String(strings[edges[e + edgeNameAt]!]);
    }
    return '?';
  };
  /** Whether a node is an instance of a class of its own (not a Map, an Array or a plain object). */
  const named = (v: number) =>
    nodeTypes[nodes[v * NF + typeAt]!] === 'object' &&
    !['Object', 'Map', 'Set', 'Array', 'system / Context'].includes(String(strings[nodes[v * NF + nameAt]!]));
  /** Property names down to `v` from its nearest dominator that is a class's instance, after its name. */
  const path = (v: number, depth = 4) => {
    const names: string[] = [];
    for (let d = 0; d < depth && v !== 0 && !(d > 0 && named(v)); d++, v = idom[v]!)
      names.unshift(edgeName(idom[v]!, v));
    if (named(v)) names.unshift(String(strings[nodes[v * NF + nameAt]!]));
    return names.filter((name) => name !== '?').join('.');
  };

  const big = Array.from({ length: n }, (_, v) => v).filter(
    (v) => order[v]! >= 0 && retained[v]! >= 256 * 1024,
  );
  big.sort((a, b) => retained[b]! - retained[a]!);
  const holders = big
    .slice(0, top)
    .map((v) => ({ path: path(v), label: label(v), retainedBytes: retained[v]! }));

  // Per entry of each large Map's table: what an entry's object retains, by property path.
  const maps: EntryBreakdown[] = [];
  for (const table of big) {
    if (label(table) !== 'array' || edgeName(idom[table]!, table) !== 'table') continue;
    const perPath = new Map<string, number>();
    let entries = 0;
    const walk = (v: number, prefix: string, depth: number) => {
      for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) {
        const w = target(e);
        if (!strong(e) || idom[w] !== v) continue;
        const type = edgeTypes[edges[e + edgeTypeAt]!];
        if (type === 'hidden' || type === 'internal') {
          walk(w, prefix, depth);
          continue;
        }
        const key = `${prefix}${prefix ? '.' : ''}${type === 'element' ? '[]' : String(strings[edges[e + edgeNameAt]!])}`;
        perPath.set(key, (perPath.get(key) ?? 0) + retained[w]!);
        if (depth > 1) walk(w, key, depth - 1);
      }
    };
    for (let e = firstEdge[table]!; e < firstEdge[table + 1]!; e += EF) {
      const w = target(e);
      if (!strong(e) || idom[w] !== table || nodeTypes[nodes[w * NF + typeAt]!] !== 'object') continue;
      entries++;
      walk(w, '', 3);
    }
    if (entries < 100) continue;
    maps.push({
      path: path(table),
      entries,
      retainedBytes: retained[table]!,
      perEntry: [...perPath]
        .map(([k, b]) => [k, b / entries] as [string, number])
        .sort((a, b) => b[1] - a[1]),
    });
  }
  return { total: retained[0]!, holders, maps };
}

if (process.argv[1] === import.meta.filename) {
  const [file, top = '30'] = process.argv.slice(2);
  if (!file) throw new Error('usage: node bench/heap-retained.ts FILE [TOP]');
  const { total, holders, maps } = retainedHeap(file, Number(top));
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(2).padStart(7)} MiB`;
  process.stdout.write(`reachable ${mib(total)}\n\nlargest holders (retained):\n`);
  for (const h of holders) process.stdout.write(`${mib(h.retainedBytes)}  ${h.label.padEnd(28)} ${h.path}\n`);
  for (const m of maps) {
    process.stdout.write(`\n${m.path}: ${mib(m.retainedBytes)}, ${m.entries} entries; per entry:\n`);
    for (const [key, bytes] of m.perEntry.slice(0, 20))
      process.stdout.write(`${bytes.toFixed(0).padStart(8)} B  ${key}\n`);
  }
}
