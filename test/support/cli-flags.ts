/** The flags of a CLI command, read from its option table (the object it gives parseArgs). */
export function flagsIn(source: string): Array<{ long: string; short?: string; boolean: boolean }> {
  return [
    ...source.matchAll(/^\s+'?([a-z][a-z-]*)'?: \{ type: '(string|boolean)'(?:, short: '([a-z])')?/gm),
  ].map((m) => ({ long: m[1]!, boolean: m[2] === 'boolean', ...(m[3] ? { short: m[3] } : {}) }));
}
