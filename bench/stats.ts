/**
 * The median the benchmarks report: the middle value, or for an even count the mean of the two
 * middle ones (with two runs, the larger alone would read as a median and be the worse run).
 */
export function median(values: readonly number[]): number {
  if (!values.length) throw new Error('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
