import { describe, expect, it } from 'vitest';
import { SecretIndex, referencedSecretNames } from '../../../operator/signing/secret-index.ts';

describe('SecretIndex', () => {
  it('maps Secrets to the cards that reference them and follows spec changes', () => {
    const idx = new SecretIndex();
    idx.set('ns/a', ['ns/key1', 'ns/token']);
    idx.set('ns/b', ['ns/key1']);
    expect(idx.cardsFor('ns/key1').sort()).toEqual(['ns/a', 'ns/b']);
    idx.set('ns/a', ['ns/key2']);
    expect(idx.cardsFor('ns/key1')).toEqual(['ns/b']);
    expect(idx.cardsFor('ns/token')).toEqual([]);
    expect(idx.cardsFor('ns/key2')).toEqual(['ns/a']);
    idx.delete('ns/b');
    expect(idx.cardsFor('ns/key1')).toEqual([]);
    expect(idx.secretsOf('ns/a')).toEqual(['ns/key2']);
  });
});

describe('referencedSecretNames', () => {
  it('collects signing and probe credential Secrets, once each', () => {
    const spec = {
      signing: {
        keys: [{ secretRef: { name: 'k1', key: 'jwk' } }, { secretRef: { name: 'k1', key: 'old' } }],
      },
      probe: { credentials: [{ url: 'https://a', secretRef: { name: 'tok', key: 't' }, type: 'bearer' }] },
    };
    expect(referencedSecretNames(spec)).toEqual(['k1', 'tok']);
  });

  it('tolerates an invalid spec', () => {
    expect(referencedSecretNames(undefined)).toEqual([]);
    expect(
      referencedSecretNames({
        signing: { keys: 'x' },
        probe: { credentials: [null, { secretRef: { name: 3 } }] },
      }),
    ).toEqual([]);
  });
});
