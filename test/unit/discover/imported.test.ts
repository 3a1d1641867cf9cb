// `agentcard discover` against a catalog that lists entries imported from another cluster: the
// hub's catalog as the catalog controller plans it (spec.imports), served over real HTTP with the
// origin's signed cards. Discover verifies each imported card against its own trust, shows the
// origin the hub states, and fails an imported card whose bytes changed after signing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { importSigningKey, publicJwks, signCard, type SigningKey } from '../../../operator/card/sign.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { type ImportedEntryView } from '../../../operator/catalog/imported.ts';
import { planCatalog } from '../../../operator/controllers/catalogs/plan.ts';
import { discover } from '../../../operator/discover/discover.ts';
import { formatTable } from '../../../operator/discover/format.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { minimalCard } from '../../support/cards.ts';
import { json, startFileServer, type FileServer } from '../../support/discover-servers.ts';

const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
let files: FileServer;
let spokeKey: SigningKey;

const signed = async (name: string) =>
  signCard(renderV1(validateCard({ ...minimalCard(), name }).card!), [spokeKey]);

beforeAll(async () => {
  spokeKey = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'spoke-a-key')));
  files = await startFileServer();
  const weather = await signed('Weather');
  const radar = await signed('Radar');
  files.routes.set('/cards/weather.json', json(weather));
  // A byte changed after the spoke signed (and after the hub verified it): served in between.
  files.routes.set('/cards/radar.json', json({ ...radar, description: 'changed on the way' }));
  const spokeCatalog = `${files.origin}/spoke-a/ai-catalog.json`;
  const view = (name: string): ImportedEntryView => ({
    source: 'hub/spoke-a',
    entry: {
      identifier: `urn:air:spoke-a.example.com:team:${name}`,
      type: 'application/a2a-agent-card+json',
      url: `../cards/${name}.json`,
    },
    card: JSON.stringify(name === 'weather' ? weather : radar),
    signer: 'kid spoke-a-key',
    origin: 'spoke-a',
    catalogUrl: spokeCatalog,
    marker: { origin: 'spoke-a', catalog: spokeCatalog, signer: 'kid spoke-a-key', digest: 'sha256:00' },
  });
  const plan = await planCatalog({
    kind: 'AgentCatalog',
    catalog: {
      metadata: { name: 'hub', namespace: 'hub', uid: 'u', generation: 1 },
      spec: { publisher: 'hub.example.com', imports: { selector: {} } },
    },
    publishNamespace: 'hub',
    cards: [],
    namespaceLabels: () => ({}),
    secrets: new Map(),
    liveConfigMap: () => undefined,
    liveNames: [],
    now: new Date('2026-12-01T00:00:00Z'),
    imports: [{ namespace: 'hub', name: 'spoke-a', labels: {}, entries: [view('weather'), view('radar')] }],
  });
  files.routes.set('/hub/ai-catalog.json', json(JSON.parse(plan.configMaps[0]!.data['ai-catalog.json']!)));
});

afterAll(() => files?.close());

describe('discover against a catalog with imported entries', () => {
  it('verifies each imported card itself, shows its origin, and fails a tampered one', async () => {
    const report = await discover({
      urls: [`${files.origin}/hub/ai-catalog.json`],
      policy,
      jwks: { keys: publicJwks([spokeKey]).keys },
    });
    const weather = report.cards.find((c) => c.name === 'Weather')!;
    expect(weather).toMatchObject({
      ok: true,
      source: `${files.origin}/cards/weather.json`,
      signature: { status: 'verified', kid: 'spoke-a-key' },
      entry: {
        identifier: 'urn:air:spoke-a.example.com:team:weather',
        origin: {
          cluster: 'spoke-a',
          catalog: `${files.origin}/spoke-a/ai-catalog.json`,
          signer: 'kid spoke-a-key',
        },
      },
    });
    expect(weather.trustManifest).toBeUndefined();
    const radar = report.cards.find((c) => c.entry?.identifier.endsWith(':radar'))!;
    expect(radar.ok).toBe(false);
    expect(radar.signature.status).not.toBe('verified');
    const table = formatTable(report);
    expect(table).toContain(
      `imported from spoke-a (${files.origin}/spoke-a/ai-catalog.json), signer verified there: kid spoke-a-key`,
    );
    expect(table).toContain('2 cards, 1 ok');
  });

  it('a client that does not trust the origin key does not verify the imported card', async () => {
    const report = await discover({
      urls: [`${files.origin}/hub/ai-catalog.json`],
      policy,
      jwks: { keys: [] },
    });
    const weather = report.cards.find((c) => c.name === 'Weather')!;
    expect(weather.ok).toBe(false);
    expect(weather.entry?.origin?.cluster).toBe('spoke-a');
  });
});
