/**
 * JSON text for comparing two values (statuses, planned documents): object keys sorted, undefined
 * dropped. Not RFC 8785 (card/jcs.ts is, for what is signed); only equality of the text matters.
 */
/** Equal values give equal text. */
export function sortedJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      );
    }
    return v;
  });
}
