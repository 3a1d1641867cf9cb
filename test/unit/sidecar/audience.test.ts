import { describe, expect, it } from 'vitest';
import { candidates, isVariantFile, normalizeHost, requestHost } from '../../../operator/sidecar/audience.ts';

describe('normalizeHost', () => {
  it.each([
    ['api.example.com', 'api.example.com'],
    ['API.Example.COM', 'api.example.com'],
    ['api.example.com:8443', 'api.example.com'],
    ['api.example.com.', 'api.example.com'],
    ['api.example.com.:80', 'api.example.com'],
    ['localhost', 'localhost'],
  ])('%s -> %s', (raw, host) => {
    expect(normalizeHost(raw)).toBe(host);
  });
  it.each([
    '',
    '..',
    'a..b',
    'a/b',
    '../agent-card.json',
    'a\\b',
    'a\0b',
    'a b',
    '[::1]',
    '[::1]:80',
    'a.example.com..',
    '-a.example.com',
    'a_b.example.com',
    'x:notaport',
    'a'.repeat(64) + '.com',
  ])('refuses %j', (raw) => {
    expect(normalizeHost(raw)).toBeUndefined();
  });
});

describe('requestHost', () => {
  const headers = { host: 'internal:8095', 'x-forwarded-host': 'Public.Example.com, proxy.local' };
  it('uses Host unless the proxy is trusted, then the first X-Forwarded-Host', () => {
    expect(requestHost(headers, false)).toBe('internal');
    expect(requestHost(headers, true)).toBe('public.example.com');
    expect(requestHost({ host: 'a.example' }, true)).toBe('a.example');
  });
});

describe('candidates', () => {
  it('tries the exact host, then the wildcard of its parent, then the default', () => {
    expect(candidates('agent-card.json', 'api.example.com')).toEqual([
      'host.api.example.com.agent-card.json',
      'wildcard.example.com.agent-card.json',
      'agent-card.json',
    ]);
    expect(candidates('agent.json', 'localhost')).toEqual(['host.localhost.agent.json', 'agent.json']);
    expect(candidates('agent-card.json', undefined)).toEqual(['agent-card.json']);
    // The keys are shared by every audience.
    expect(candidates('jwks.json', 'api.example.com')).toEqual(['jwks.json']);
  });
  it('recognizes variant files and nothing else', () => {
    expect(isVariantFile('host.api.example.com.agent-card.json')).toBe(true);
    expect(isVariantFile('wildcard.example.com.agent.json')).toBe(true);
    expect(isVariantFile('host.api.example.com.jwks.json')).toBe(false);
    expect(isVariantFile('host..agent-card.json')).toBe(false);
    expect(isVariantFile('agent-card.json')).toBe(false);
    expect(isVariantFile('host.API.agent-card.json')).toBe(false);
  });
});
