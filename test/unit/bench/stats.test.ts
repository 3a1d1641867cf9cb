import { describe, expect, it } from 'vitest';
import { median } from '../../../bench/stats.ts';

describe('median', () => {
  it('is the middle value of an odd count, in any order', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([118.2, 97.6, 101])).toBe(101);
  });

  it('is the mean of the two middle values of an even count, not the larger', () => {
    expect(median([97.6, 118.2])).toBeCloseTo(107.9);
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('refuses no values rather than answering undefined', () => {
    expect(() => median([])).toThrow('median of no values');
  });
});
