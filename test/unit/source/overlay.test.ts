import { describe, expect, it } from 'vitest';
import {
  adoptedCard,
  effectiveSpec,
  mergeOverlay,
  pointerTokens,
  removeFields,
} from '../../../operator/source/overlay.ts';
import { minimalCard } from '../../support/cards.ts';

describe('spec.remove (RFC 6901 JSON Pointers)', () => {
  it('decodes ~1 and ~0', () => {
    expect(pointerTokens('/a~1b/c~0d/0')).toEqual(['a/b', 'c~d', '0']);
    expect(() => pointerTokens('a')).toThrow(/JSON Pointer/);
  });

  it('removes fields and list items, every pointer against the card as given', () => {
    const card = {
      provider: { organization: 'o', url: 'https://x' },
      skills: [{ id: 'a' }, { id: 'b' }, { id: 'c' }],
      'a/b': 1,
    };
    const { card: out, unmatched } = removeFields(card, ['/provider/url', '/skills/0', '/skills/1', '/a~1b']);
    expect(out).toEqual({ provider: { organization: 'o' }, skills: [{ id: 'c' }] });
    expect(unmatched).toEqual([]);
    expect(card.skills).toHaveLength(3); // the input is not changed
  });

  it('reports pointers that match nothing, and does not treat "-" or "01" as indices', () => {
    const { card, unmatched } = removeFields({ skills: [{ id: 'a' }], x: {} }, [
      '/nope',
      '/skills/5',
      '/skills/-',
      '/skills/01',
      '/x/y/z',
    ]);
    expect(card).toEqual({ skills: [{ id: 'a' }], x: {} });
    expect(unmatched).toEqual(['/nope', '/skills/5', '/skills/-', '/skills/01', '/x/y/z']);
  });

  it('does not follow inherited properties', () => {
    expect(removeFields({}, ['/constructor']).unmatched).toEqual(['/constructor']);
  });
});

describe('spec.card as an overlay', () => {
  it('objects merge key by key; lists and scalars replace', () => {
    const base = {
      name: 'Agent',
      capabilities: { streaming: true, pushNotifications: false },
      skills: [{ id: 'a' }, { id: 'b' }],
      securitySchemes: { k: { apiKeySecurityScheme: { name: 'X', location: 'header' } } },
    };
    const out = mergeOverlay(base, {
      name: 'Better',
      capabilities: { pushNotifications: true },
      skills: [{ id: 'c' }],
      securitySchemes: { b: { httpAuthSecurityScheme: { scheme: 'bearer' } } },
    });
    expect(out).toEqual({
      name: 'Better',
      capabilities: { streaming: true, pushNotifications: true },
      skills: [{ id: 'c' }],
      securitySchemes: {
        k: { apiKeySecurityScheme: { name: 'X', location: 'header' } },
        b: { httpAuthSecurityScheme: { scheme: 'bearer' } },
      },
    });
    expect(base.capabilities.pushNotifications).toBe(false);
  });

  it('removes before merging, so spec.card can put back what spec.remove took', () => {
    const { card, unmatched } = adoptedCard(minimalCard(), {
      remove: ['/skills', '/capabilities', '/nothing'],
      card: { skills: [{ id: 'mine', name: 'Mine', description: 'd', tags: [] }], version: '9' },
    });
    expect(card.skills).toEqual([{ id: 'mine', name: 'Mine', description: 'd', tags: [] }]);
    expect(card).not.toHaveProperty('capabilities');
    expect(card.version).toBe('9');
    expect(unmatched).toEqual(['/nothing']);
  });

  it('the effective spec is a written one: card replaced, source and remove gone', () => {
    const spec = {
      source: { url: 'http://x' },
      remove: ['/a'],
      card: { version: '2' },
      probe: { enabled: false },
    };
    expect(effectiveSpec(spec, { name: 'n' })).toEqual({ card: { name: 'n' }, probe: { enabled: false } });
  });
});
