/**
 * Where a card's JSON path is in the file it came from (pure): the line of an AgentCard
 * manifest's `spec.card` field, or of a bare card's field, so that a GitHub Actions annotation
 * lands on the line a pull request changed. An item that is gone from the file (a skill removed)
 * is placed at the nearest enclosing field that is still there (`skills`).
 */
import { isMap, LineCounter, parseAllDocuments, type Document } from 'yaml';
import { API_VERSION, KIND } from '../api/names.ts';

export type Segment = string | number;

/** `skills[0].tags`, `securitySchemes["my scheme"].x` -> its segments (operator/card/problem.ts). */
export function parsePath(path: string): Segment[] {
  const out: Segment[] = [];
  const token = /\.?([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/gy;
  let m: RegExpExecArray | null;
  while (token.lastIndex < path.length && (m = token.exec(path))) {
    out.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : (JSON.parse(m[3]!) as string)));
  }
  return out;
}

/**
 * A function from a card path to its 1-based line in `text`, for the AgentCard manifest named
 * `name` (the first one when undefined) or the bare card the file holds. `gone`: the item is not
 * in this file; its enclosing field is looked up, never a list entry (an index may now name
 * another item).
 */
export function cardLines(
  text: string,
  name: string | undefined,
): (path: string, gone: boolean) => number | undefined {
  const lines = new LineCounter();
  let docs: Document.Parsed[];
  try {
    const parsed = parseAllDocuments(text, { lineCounter: lines });
    docs = Array.isArray(parsed) ? parsed : [];
  } catch {
    return () => undefined;
  }
  let base: Segment[] | undefined;
  let doc: Document.Parsed | undefined;
  for (const d of docs) {
    if (d.errors.length || !isMap(d.contents)) continue;
    const manifest = d.get('apiVersion') === API_VERSION && d.get('kind') === KIND;
    if (manifest && (name === undefined || d.getIn(['metadata', 'name']) === name)) {
      [doc, base] = [d, ['spec', 'card']];
      break;
    }
    if (!d.has('apiVersion') && !d.has('kind') && (name === undefined || d.get('name') === name)) {
      [doc, base] = [d, []];
      break;
    }
  }
  if (!doc || !base) return () => undefined;
  const found = doc;
  const prefix = base;
  return (path, gone) => {
    let segments = parsePath(path);
    if (gone) {
      const index = segments.findIndex((s) => typeof s === 'number');
      if (index >= 0) segments = segments.slice(0, index);
    }
    for (let n = segments.length; n >= 0; n--) {
      const at = [...prefix, ...segments.slice(0, n)];
      // A field is on the line of its key (a block list or map starts on the next one).
      const key = keyLine(found, at, lines);
      if (key !== undefined) return key;
      const node = found.getIn(at, true) as { range?: [number] } | undefined;
      if (node?.range) return lines.linePos(node.range[0]).line;
    }
    return undefined;
  };
}

/** The line of the key of the field at `path` (undefined for a list entry or a missing field). */
function keyLine(doc: Document.Parsed, path: Segment[], lines: LineCounter): number | undefined {
  const last = path.at(-1);
  if (typeof last !== 'string') return undefined;
  const parent = doc.getIn(path.slice(0, -1), true);
  if (!isMap(parent)) return undefined;
  const pair = parent.items.find((p) => (p.key as { value?: unknown } | null)?.value === last);
  const range = (pair?.key as { range?: [number] } | null)?.range;
  return range ? lines.linePos(range[0]).line : undefined;
}
