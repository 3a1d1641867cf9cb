import { describe, expect, it } from 'vitest';
import {
  SecretIndex,
  SecretVersions,
  referencedSecretNames,
} from '../../../operator/controller/secret-index.ts';

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

describe('SecretVersions', () => {
  // The key rotation that the fault suite caught: the metadata-only watch reports the new version
  // first, a card is reconciled while the labelled cache still holds the old key, and the labelled
  // cache's event of the same version must still re-queue it.
  it('lets each cache report a new version once, whichever reports it first', () => {
    const versions = new SecretVersions();
    expect(versions.changed('metadata', 'ns/key', '7', false)).toBe(true);
    expect(versions.changed('data', 'ns/key', '7', false)).toBe(true);
    // A relist replaying what each cache already reported is not news.
    expect(versions.changed('metadata', 'ns/key', '7', false)).toBe(false);
    expect(versions.changed('data', 'ns/key', '7', false)).toBe(false);
    expect(versions.changed('data', 'ns/key', '8', false)).toBe(true);
    expect(versions.changed('data', 'ns/other', '8', false)).toBe(true);
  });

  it('treats a deletion as news and forgets the version, so a re-created Secret counts', () => {
    const versions = new SecretVersions();
    versions.changed('data', 'ns/key', '7', false);
    expect(versions.changed('data', 'ns/key', '7', true)).toBe(true);
    expect(versions.changed('data', 'ns/key', '7', false)).toBe(true);
  });
});
