/**
 * JSON text for comparing two values (statuses, planned documents): object keys sorted, undefined
 * dropped. Not RFC 8785 (card/jcs.ts is, for what is signed); only equality of the text matters.
 */
/** Equal values give equal text. */
export function sortedJson(value: unknown): string {
  return JSON.stringify(value, sortKeys);
}

/**
 * The replacer: an object whose keys are not in order is copied with them in order (one copy, no
 * intermediate entry arrays: this runs over every status of every reconcile).
 */
function sortKeys(_key: string, v: unknown): unknown {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return v;
  const keys = Object.keys(v);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++) sorted = keys[i - 1]! < keys[i]!;
  if (sorted) return v;
  keys.sort();
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = (v as Record<string, unknown>)[k];
  return out;
}
