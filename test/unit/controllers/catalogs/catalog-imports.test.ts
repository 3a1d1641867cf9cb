// A catalog that lists the verified entries of CatalogImports (spec.imports), without a cluster:
// which imports it selects, how an imported entry is listed (the origin's card, the origin
// member, no foreign trust manifest), who wins an identifier, the page, and that a second plan
// over the published state writes nothing.
import { describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../../operator/card/keygen.ts';
import type { CardView } from '../../../../operator/catalog/entries.ts';
import type { CatalogEntry } from '../../../../operator/catalog/document.ts';
import {
  entryOrigin,
  importedEntry,
  mergeImported,
  IMPORTED_EXTENSION,
  type ImportedEntryView,
} from '../../../../operator/catalog/imported.ts';
import { verifyCatalog } from '../../../../operator/catalog/signature.ts';
import {
  planCatalog,
  type CatalogImportView,
  type CatalogPlanInput,
} from '../../../../operator/controllers/catalogs/plan.ts';
import type { ConfigMapObject } from '../../../../operator/runtime/configmaps.ts';
import { entryView } from '../../../../operator/controllers/catalogs/imports.ts';
import {
  IMPORTED_EXTENSION as STORE_EXTENSION,
  importConfigMaps,
  isReimport,
  readImportedEntries,
} from '../../../../operator/federation/store.ts';
import { minimalCard } from '../../../support/cards.ts';

const REMOTE = 'https://spoke-a.example.com/.well-known/ai-catalog.json';
const SIGNER = 'spiffe://spoke-a.example.com/ns/team/sa/weather';

const cardText = (name: string) =>
  JSON.stringify({
    ...minimalCard(),
    name,
    skills: [{ id: 'f', name: 'Forecast', description: 'd', tags: ['weather'] }],
  });

function imported(name: string, extra: Partial<ImportedEntryView> = {}): ImportedEntryView {
  return {
    source: 'hub/spoke-a',
    entry: {
      identifier: `urn:air:spoke-a.example.com:team:${name}`,
      type: 'application/a2a-agent-card+json',
      url: `https://${name}.spoke-a.example.com/.well-known/agent-card.json`,
      version: '1.0.0',
      updatedAt: '2026-11-01T00:00:00Z',
      trustManifest: { identity: 'spiffe://spoke-a.example.com/catalog', signature: 'x..y' },
    },
    card: cardText(`Agent ${name}`),
    signer: SIGNER,
    origin: 'spoke-a',
    catalogUrl: REMOTE,
    marker: { origin: 'spoke-a', catalog: REMOTE, signer: SIGNER, digest: 'sha256:00' },
    ...extra,
  };
}

const view = (namespace: string, name: string): CardView => ({
  namespace,
  name,
  labels: {},
  annotations: {},
  card: { ...minimalCard(), name: `Agent ${name}` },
  ready: 'True',
  signed: false,
});

function input(overrides: Partial<CatalogPlanInput> = {}, live = new Map<string, ConfigMapObject>()) {
  const imports: CatalogImportView[] = [
    { namespace: 'hub', name: 'spoke-a', labels: { fleet: 'prod' }, entries: [imported('weather')] },
    { namespace: 'hub', name: 'spoke-dev', labels: { fleet: 'dev' }, entries: [imported('dev-only')] },
    { namespace: 'other', name: 'spoke-b', labels: { fleet: 'prod' }, entries: [imported('billing')] },
  ];
  return {
    kind: 'AgentCatalog',
    catalog: {
      metadata: { name: 'hub', namespace: 'hub', uid: 'u1', generation: 1 },
      spec: { publisher: 'hub.example.com', imports: { selector: { matchLabels: { fleet: 'prod' } } } },
    },
    publishNamespace: 'hub',
    cards: [view('hub', 'local')],
    namespaceLabels: (ns: string) => ({ region: ns === 'other' ? 'eu' : 'us' }),
    secrets: new Map(),
    liveConfigMap: (name: string) => live.get(name),
    liveNames: [...live.keys()],
    now: new Date('2026-12-01T00:00:00Z'),
    imports,
    ...overrides,
  } satisfies CatalogPlanInput;
}

const docOf = (cm: ConfigMapObject) =>
  JSON.parse(cm.data['ai-catalog.json']!) as { entries: CatalogEntry[]; signature?: string };

describe('an imported entry', () => {
  it('is listed as its origin published it, marked with the verified origin, without the foreign manifest', () => {
    const result = importedEntry(imported('weather'));
    expect(result.ok).toBe(true);
    const { entry, facts } = (result as Extract<typeof result, { ok: true }>).built;
    expect(entry).toEqual({
      identifier: 'urn:air:spoke-a.example.com:team:weather',
      type: 'application/a2a-agent-card+json',
      url: 'https://weather.spoke-a.example.com/.well-known/agent-card.json',
      version: '1.0.0',
      extensions: {
        [IMPORTED_EXTENSION]: { origin: 'spoke-a', catalog: REMOTE, signer: SIGNER, digest: 'sha256:00' },
      },
    });
    expect(entryOrigin(entry)).toEqual({ cluster: 'spoke-a', catalog: REMOTE, signer: SIGNER });
    expect(facts).toMatchObject({
      name: 'Agent weather',
      skills: ['Forecast'],
      tags: ['weather'],
      signedBy: SIGNER,
      origin: { cluster: 'spoke-a', signer: SIGNER },
    });
  });

  it("keeps inline data and the origin's extensions, resolves a relative url, refuses a non-http one", () => {
    const data = JSON.parse(cardText('Agent inline')) as CatalogEntry['data'];
    const inline = importedEntry(
      imported('inline', {
        entry: {
          identifier: 'urn:air:spoke-a.example.com:team:inline',
          type: 'application/a2a-agent-card+json',
          data,
          extensions: { 'com.example.keep': true },
        },
      }),
    );
    expect(inline).toMatchObject({
      ok: true,
      built: {
        entry: {
          data,
          extensions: {
            'com.example.keep': true,
            [IMPORTED_EXTENSION]: { origin: 'spoke-a', catalog: REMOTE, signer: SIGNER, digest: 'sha256:00' },
          },
        },
      },
    });
    const relative = importedEntry(
      imported('rel', {
        entry: { ...imported('rel').entry, url: '../cards/rel.json' },
      }),
    );
    expect(relative).toMatchObject({
      ok: true,
      built: { entry: { url: 'https://spoke-a.example.com/cards/rel.json' } },
    });
    expect(
      importedEntry(imported('js', { entry: { ...imported('js').entry, url: 'javascript:alert(1)' } })),
    ).toEqual({
      ok: false,
      skip: 'hub/spoke-a: urn:air:spoke-a.example.com:team:js: its url is not an http(s) URL',
    });
  });

  it('a local entry wins its identifier, then the first import by namespace/name', () => {
    const local = importedEntry(imported('weather'));
    if (!local.ok) throw new Error(local.skip);
    const merged = mergeImported(
      [local.built],
      [
        imported('weather', { source: 'hub/z-second' }),
        imported('radar', { source: 'hub/z-second', signer: 'second' }),
        imported('radar', { source: 'hub/a-first', signer: 'first' }),
      ],
    );
    expect(merged.built.map((b) => b.entry.identifier)).toEqual([
      'urn:air:spoke-a.example.com:team:weather',
      'urn:air:spoke-a.example.com:team:radar',
    ]);
    expect(merged.built[1]!.facts.signedBy).toBe('first');
    expect(merged.listed).toBe(1);
    expect(merged.skipped).toEqual([
      'hub/z-second: urn:air:spoke-a.example.com:team:radar: shadowed by an entry of the same identifier listed first',
      'hub/z-second: urn:air:spoke-a.example.com:team:weather: shadowed by an entry of the same identifier listed first',
    ]);
  });
});

describe('a catalog with spec.imports', () => {
  it('lists the selected imports of its namespace only, signed, and writes nothing the second time', async () => {
    const jwk = JSON.stringify(await generateSigningJwk('ES256', 'hub-1'));
    const secrets = new Map([
      ['key', { data: { jwk: Buffer.from(jwk).toString('base64') }, labelled: true }],
    ]);
    const catalog = {
      metadata: { name: 'hub', namespace: 'hub', uid: 'u1', generation: 1 },
      spec: {
        publisher: 'hub.example.com',
        imports: { selector: { matchLabels: { fleet: 'prod' } } },
        signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] },
      },
    };
    const first = await planCatalog(input({ catalog, secrets }));
    const cm = first.configMaps[0]!;
    const doc = docOf(cm);
    // spoke-dev is not selected; spoke-b is another namespace's.
    expect(doc.entries.map((e) => e.identifier)).toEqual([
      'urn:air:hub.example.com:hub:local',
      'urn:air:spoke-a.example.com:team:weather',
    ]);
    expect(doc.entries[1]!.trustManifest).toBeUndefined();
    expect(doc.entries[1]!.extensions?.[IMPORTED_EXTENSION]).toEqual({
      origin: 'spoke-a',
      catalog: REMOTE,
      signer: SIGNER,
      digest: 'sha256:00',
    });
    expect(await verifyCatalog(doc, JSON.parse(cm.data['jwks.json']!))).toMatchObject({ verified: true });
    expect(first.status).toMatchObject({ entries: 2, imported: 1 });
    expect(first.status.conditions?.find((c) => c.type === 'Published')?.message).toContain(
      'holds 2 entries (1 imported)',
    );
    // The page names the origin cluster and the signer.
    const page = cm.data['index.html']!;
    expect(page).toContain('<b>From cluster:</b> spoke-a · <b>signer:</b> ' + SIGNER);
    expect(page).toContain('Agent weather');

    const second = await planCatalog(
      input(
        { catalog: { ...catalog, status: first.status }, secrets, now: new Date('2026-12-01T05:00:00Z') },
        new Map([[cm.metadata.name, cm]]),
      ),
    );
    expect(second.configMaps).toEqual([]);
    expect(second.statusChanged).toBe(false);
  });

  it('lists no import without spec.imports (existing catalogs do not change)', async () => {
    const plan = await planCatalog(
      input({
        catalog: { metadata: { name: 'hub', namespace: 'hub', uid: 'u1', generation: 1 }, spec: {} },
      }),
    );
    expect(docOf(plan.configMaps[0]!).entries.map((e) => e.identifier)).toEqual([
      'urn:air:cluster.local:hub:local',
    ]);
    expect(plan.status.imported).toBeUndefined();
  });

  it('a ClusterAgentCatalog selects imports by namespace labels too', async () => {
    const plan = await planCatalog(
      input({
        kind: 'ClusterAgentCatalog',
        catalog: {
          metadata: { name: 'all', uid: 'u2', generation: 1 },
          spec: {
            imports: { selector: {}, namespaceSelector: { matchLabels: { region: 'eu' } } },
          },
        },
        publishNamespace: 'ops',
        cards: [],
      }),
    );
    expect(docOf(plan.configMaps[0]!).entries.map((e) => e.identifier)).toEqual([
      'urn:air:spoke-a.example.com:team:billing',
    ]);
  });

  it('an AgentCatalog refuses imports.namespaceSelector (strict schema)', async () => {
    const plan = await planCatalog(
      input({
        catalog: {
          metadata: { name: 'hub', namespace: 'hub', uid: 'u1', generation: 1 },
          spec: { imports: { selector: {}, namespaceSelector: {} } },
        },
      }),
    );
    expect(plan.configMaps).toEqual([]);
    expect(plan.status.conditions?.find((c) => c.type === 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'InvalidSpec',
    });
  });
});

describe('the store contract, read by the catalogs', () => {
  it('lists what an import stored, marked with the member the importer checks for re-imports', async () => {
    const stored = {
      entry: imported('weather').entry,
      card: cardText('Agent weather'),
      digest: 'sha256:aa',
      cardUrl: 'https://weather.spoke-a.example.com/.well-known/agent-card.json',
      signer: SIGNER,
      catalogUrl: REMOTE,
      origin: 'spoke-a',
    };
    const [cm] = importConfigMaps({ namespace: 'hub', name: 'spoke-a', uid: 'i1' }, [stored]);
    const [view] = readImportedEntries([cm!]).map(entryView);
    expect(view).toMatchObject({ source: 'hub/spoke-a', origin: 'spoke-a', catalogUrl: REMOTE });
    const listed = importedEntry(view!);
    if (!listed.ok) throw new Error(listed.skip);
    expect(IMPORTED_EXTENSION).toBe(STORE_EXTENSION);
    expect(listed.built.entry.extensions?.[IMPORTED_EXTENSION]).toEqual({
      origin: 'spoke-a',
      catalog: REMOTE,
      signer: SIGNER,
      digest: 'sha256:aa',
      cardUrl: 'https://weather.spoke-a.example.com/.well-known/agent-card.json',
    });
    // What a hub lists is not imported again by a cluster that imports the hub.
    expect(isReimport(listed.built.entry)).toBe(true);
    expect(isReimport(stored.entry)).toBe(false);
  });
});
