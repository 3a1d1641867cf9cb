import { describe, expect, it } from 'vitest';
import {
  A2A_AGENT_CARD_MEDIA_TYPE,
  AI_CATALOG_MEDIA_TYPE,
  entryDisplayName,
  isAgentCardEntry,
  isCatalogEntry,
  nestsDeeperThan,
  validateCatalog,
} from '../../../operator/catalog/document.ts';

/** The four-entry example of the AI Catalog spec ("Top-Level Structure"), plus a host. */
function specExample(): Record<string, unknown> {
  return {
    specVersion: '1.0',
    host: { displayName: 'Example Corp', identifier: 'did:web:example.com' },
    entries: [
      {
        identifier: 'urn:air:example.com:skill:code-review',
        displayName: 'Code Review Assistant',
        type: 'application/agent-skills+zip',
        url: 'https://skills.example.com/code-review/skill.zip',
      },
      {
        identifier: 'urn:air:example.com:mcp:weather',
        type: 'application/mcp-server-card+json',
        url: 'https://api.example.com/mcp/server-card',
      },
      {
        identifier: 'urn:air:example.com:a2a:research',
        type: A2A_AGENT_CARD_MEDIA_TYPE,
        url: 'https://agents.example.com/researchAssistant',
      },
      {
        identifier: 'urn:air:example.com:catalog:finance',
        type: AI_CATALOG_MEDIA_TYPE,
        data: { specVersion: '1.0', entries: [] },
        tags: ['finance'],
        updatedAt: '2026-03-15T10:00:00Z',
      },
    ],
  };
}

const messages = (input: unknown) => validateCatalog(input).problems.map((p) => `${p.path}: ${p.message}`);

describe('validateCatalog', () => {
  it('accepts the spec example and returns it typed', () => {
    const { catalog, problems } = validateCatalog(specExample());
    expect(problems).toEqual([]);
    expect(catalog!.entries).toHaveLength(4);
    expect(catalog!.host?.displayName).toBe('Example Corp');
  });

  it('accepts an empty entries array (spec: MAY be empty)', () => {
    expect(messages({ specVersion: '1.0', entries: [] })).toEqual([]);
  });

  it('ignores and keeps members it does not know (forward compatibility), at every level', () => {
    const doc = specExample();
    doc.futureTopLevel = { x: 1 };
    (doc.entries as Record<string, unknown>[])[0]!.futureEntryField = 'y';
    (doc.host as Record<string, unknown>).futureHostField = true;
    const { catalog, problems } = validateCatalog(doc);
    expect(problems).toEqual([]);
    expect(catalog).toMatchObject({ futureTopLevel: { x: 1 }, host: { futureHostField: true } });
    expect(catalog!.entries[0]).toMatchObject({ futureEntryField: 'y' });
  });

  it('accepts a higher minor version and rejects a higher major one with a clear message', () => {
    expect(messages({ specVersion: '1.7', entries: [] })).toEqual([]);
    expect(messages({ specVersion: '2.0', entries: [] })).toEqual([
      'specVersion: major version 2 is not supported (this tool reads 1.x)',
    ]);
    expect(messages({ specVersion: '1', entries: [] })).toEqual([
      'specVersion: must be "Major.Minor", e.g. "1.0"',
    ]);
  });

  it('names each missing required member by its path', () => {
    expect(messages({})).toEqual([
      'specVersion: required field is missing',
      'entries: required field is missing',
    ]);
    expect(messages({ specVersion: '1.0', entries: [{ url: 'https://a.example/card.json' }] })).toEqual([
      'entries[0].identifier: required field is missing',
      'entries[0].type: required field is missing',
    ]);
    expect(messages({ specVersion: '1.0', entries: [], host: {} })).toEqual([
      'host.displayName: required field is missing',
    ]);
  });

  it('needs exactly one of url and data', () => {
    const entry = { identifier: 'urn:x', type: A2A_AGENT_CARD_MEDIA_TYPE };
    expect(messages({ specVersion: '1.0', entries: [entry] })).toEqual([
      'entries[0]: exactly one of url, data must be set (none is)',
    ]);
    expect(
      messages({ specVersion: '1.0', entries: [{ ...entry, url: 'https://a.example/', data: {} }] }),
    ).toEqual(['entries[0]: exactly one of url, data must be set (found url, data)']);
  });

  it('rejects duplicate identifiers, and allows them with distinct versions', () => {
    const e = (version?: string) => ({
      identifier: 'urn:air:acme.com:agent:finance',
      type: A2A_AGENT_CARD_MEDIA_TYPE,
      url: `https://acme.example/${version ?? 'x'}.json`,
      ...(version ? { version } : {}),
    });
    expect(messages({ specVersion: '1.0', entries: [e('2.1.0'), e('2.0.0')] })).toEqual([]);
    expect(messages({ specVersion: '1.0', entries: [e(), e()] })).toEqual([
      'entries[1].identifier: duplicate identifier "urn:air:acme.com:agent:finance" (also entries[0]); list versions with "version"',
    ]);
    expect(messages({ specVersion: '1.0', entries: [e('1'), e('1')] })[0]).toMatch(
      /with version "1" \(also entries\[0\]\)/,
    );
  });

  it('checks the types of optional members it knows', () => {
    const entry = { identifier: 'urn:x', type: A2A_AGENT_CARD_MEDIA_TYPE, url: 'https://a.example/' };
    expect(messages({ specVersion: '1.0', entries: [{ ...entry, tags: 'finance' }] })).toEqual([
      'entries[0].tags: expected array, got string',
    ]);
    expect(messages({ specVersion: '1.0', entries: [{ ...entry, updatedAt: 'yesterday' }] })).toEqual([
      'entries[0].updatedAt: must be an RFC 3339 timestamp',
    ]);
    expect(
      messages({ specVersion: '1.0', entries: [{ ...entry, publisher: { displayName: 'Acme' } }] }),
    ).toEqual(['entries[0].publisher.identifier: required field is missing']);
    expect(
      messages({ specVersion: '1.0', entries: [{ ...entry, trustManifest: { identityType: 'did' } }] }),
    ).toEqual(['entries[0].trustManifest.identity: required field is missing']);
    expect(messages({ specVersion: '1.0', entries: [], signature: 42 })).toEqual([
      'signature: expected string, got number',
    ]);
  });

  it('accepts relative entry URLs (resolved against the catalog URL by consumers) and rejects non-URLs', () => {
    const entry = { identifier: 'urn:x', type: AI_CATALOG_MEDIA_TYPE };
    expect(messages({ specVersion: '1.0', entries: [{ ...entry, url: 'nested/catalog.json' }] })).toEqual([]);
    expect(messages({ specVersion: '1.0', entries: [{ ...entry, url: 'http://[bad' }] })).toEqual([
      'entries[0].url: must be a URL',
    ]);
  });

  it('says so when the document is not an object', () => {
    expect(messages([])).toEqual(['(root): an AI Catalog must be a JSON object']);
    expect(messages('catalog')).toEqual(['(root): an AI Catalog must be a JSON object']);
  });
});

describe('entry helpers', () => {
  it('classifies entries by media type, ignoring case and parameters', () => {
    expect(isAgentCardEntry({ type: 'application/a2a-agent-card+json' })).toBe(true);
    expect(isAgentCardEntry({ type: 'Application/A2A-Agent-Card+JSON; charset=utf-8' })).toBe(true);
    expect(isCatalogEntry({ type: AI_CATALOG_MEDIA_TYPE })).toBe(true);
    expect(isCatalogEntry({ type: A2A_AGENT_CARD_MEDIA_TYPE })).toBe(false);
  });

  it('resolves a display name in the spec order', () => {
    expect(
      entryDisplayName({ identifier: 'urn:air:e.com:mcp:weather', displayName: 'Weather' }, 'Card name'),
    ).toBe('Weather');
    expect(entryDisplayName({ identifier: 'urn:air:e.com:mcp:weather' }, 'Card name')).toBe('Card name');
    expect(entryDisplayName({ identifier: 'urn:air:e.com:mcp:weather' })).toBe('weather');
    expect(entryDisplayName({ identifier: 'https://registry.example/ids/7bf4a8c2' })).toBe('7bf4a8c2');
  });
});

describe('nesting depth', () => {
  it('refuses a document nested deeper than 64 levels, before any recursive walk', () => {
    const deep = JSON.parse(
      `{"specVersion":"1.0","entries":[],"extensions":{"x":${'['.repeat(20_000)}${']'.repeat(20_000)}}}`,
    );
    expect(messages(deep)).toEqual(['(root): nests deeper than 64 levels']);
    expect(nestsDeeperThan({ a: [{ b: 1 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [{ b: {} }] }, 3)).toBe(true);
  });
});
