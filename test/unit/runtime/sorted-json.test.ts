import { describe, expect, it } from 'vitest';
import { sortedJson } from '../../../operator/runtime/sorted-json.ts';

describe('sortedJson', () => {
  it('gives equal text for equal values whatever the order of their keys', () => {
    const a = { status: { b: 1, a: [{ y: 2, x: 1 }], c: { e: 'e', d: 'd' } }, kind: 'K' };
    const b = { kind: 'K', status: { c: { d: 'd', e: 'e' }, a: [{ x: 1, y: 2 }], b: 1 } };
    expect(sortedJson(a)).toBe(sortedJson(b));
    expect(sortedJson(a)).toBe('{"kind":"K","status":{"a":[{"x":1,"y":2}],"b":1,"c":{"d":"d","e":"e"}}}');
  });

  it('drops undefined, keeps array order and tells different values apart', () => {
    expect(sortedJson({ b: undefined, a: [2, 1] })).toBe('{"a":[2,1]}');
    expect(sortedJson({ a: [1, 2] })).not.toBe(sortedJson({ a: [2, 1] }));
    expect(sortedJson({ a: { b: 1 } })).not.toBe(sortedJson({ a: { b: 2 } }));
  });
});
