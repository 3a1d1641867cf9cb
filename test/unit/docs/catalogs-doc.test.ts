/**
 * docs/catalogs.md promises the wording of catalog conditions: every reason it names is one the
 * catalog controller writes, and the messages it quotes are the ones the code composes (not the
 * AgentCard's wording).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CATALOG_REASONS_BY_TYPE } from '../../../operator/api/reasons.ts';
import { CATALOG_READINESS } from '../../../operator/controllers/catalogs/plan.ts';
import { loadSigningKeys } from '../../../operator/signing/keys.ts';
import { repoRoot } from '../../support/paths.ts';

const doc = () => readFileSync(join(repoRoot, 'docs/catalogs.md'), 'utf8');
const section = () => {
  const text = doc();
  const start = text.indexOf('## Status');
  return text.slice(start, text.indexOf('\n## ', start + 1));
};

describe('docs/catalogs.md', () => {
  it('names only reasons the catalog controller writes', () => {
    const known = new Set<string>(Object.values(CATALOG_REASONS_BY_TYPE).flat());
    const notReasons = new Set(['True', 'False', 'Unknown', ...Object.keys(CATALOG_REASONS_BY_TYPE)]);
    const named = [...section().matchAll(/`([A-Z][A-Za-z]+)`/g)].map((m) => m[1]!);
    const reasons = named.filter((n) => !notReasons.has(n));
    expect(reasons.length).toBeGreaterThan(4);
    for (const reason of reasons) expect(known, reason).toContain(reason);
  });

  it('quotes the missing-Secret message the code writes, in the catalog wording', async () => {
    const quoted = /reads `(Secret "<name>" not found in\s+namespace <ns>; \.\.\.; [^`]+)`/.exec(section());
    expect(quoted, 'the quoted message').not.toBeNull();
    const [head, tail] = quoted![1]!.replace(/\s+/g, ' ').split('; ...; ') as [string, string];
    const { condition } = await loadSigningKeys(
      { signing: { keys: [{ secretRef: { name: 'catalog-key', key: 'jwk' } }] } },
      'ops',
      new Map(),
      'nothing is published yet',
      'catalog',
    );
    expect(condition.reason).toBe('SigningKeyNotFound');
    expect(condition.message).toContain(head.replace('<name>', 'catalog-key').replace('<ns>', 'ops'));
    expect(condition.message).toContain(`; ${tail}; `);
    expect(condition.message).not.toContain('card');
    // The doc says the message ends in what is still served.
    expect(condition.message).toMatch(/; nothing is published yet$/);
    expect(section()).toContain('"the last good catalog stays published"');
  });

  it('shows the Ready message the readiness policy writes', () => {
    const example = /reason: Ready, message: '([^']+)'/.exec(section());
    const signed = new Map([
      [
        'Signed',
        { type: 'Signed', status: 'True' as const, reason: 'Signed', message: '', observedGeneration: 1 },
      ],
    ]);
    expect(example?.[1]).toBe(CATALOG_READINESS.readyMessage(signed));
  });
});
