import { describe, expect, it } from 'vitest';
import { MAX_AGE_PLACES, maxAgeDigitKeys } from '../../../operator/sidecar/max-age-keys.ts';
import { nginxConfig } from '../../../operator/sidecar/nginx.ts';

describe('maxAgeDigitKeys', () => {
  it('spells a max-age one digit per key, units at place 0, no leading zeros', () => {
    expect(maxAgeDigitKeys(300)).toEqual({
      'cache-max-age-seconds.place2-digit3': '3',
      'cache-max-age-seconds.place1-digit0': '0',
      'cache-max-age-seconds.place0-digit0': '0',
    });
    expect(maxAgeDigitKeys(0)).toEqual({ 'cache-max-age-seconds.place0-digit0': '0' });
    expect(Object.keys(maxAgeDigitKeys(86_400))).toHaveLength(MAX_AGE_PLACES);
  });

  it('refuses a number outside 0 to 86400, naming it', () => {
    for (const bad of [-1, 86_401, 1.5, Number.NaN]) {
      expect(() => maxAgeDigitKeys(bad)).toThrow(`max-age must be an integer from 0 to 86400, got ${bad}`);
    }
  });

  it('names only keys the nginx configuration tests, for every place and digit a max-age can have', () => {
    const conf = nginxConfig({
      cardDir: '/etc/agentcard',
      listen: ['8095'],
      tmpDir: '/tmp',
      maxAgeSeconds: 300,
      keepAliveSeconds: 620,
      maxHeaderBytes: 16_384,
      trustForwardedHost: false,
    });
    const tested = new Set(
      [...conf.matchAll(/if \(-f \$document_root\/(cache-max-age-seconds[^)]+)\)/g)].map((m) => m[1]),
    );
    const needed = new Set<string>();
    // Every digit at every place a number up to 86400 can have: d * 10^p holds d at place p, and
    // 10^(p+1) holds 0 at place p.
    for (let p = 0; p <= MAX_AGE_PLACES; p++) {
      for (let d = 0; d <= 9; d++) {
        const seconds = d * 10 ** p;
        if (seconds <= 86_400) for (const key of Object.keys(maxAgeDigitKeys(seconds))) needed.add(key);
      }
    }
    expect([...tested].sort()).toEqual([...needed].sort());
  });
});
