// Card changes in the cluster (docs/changes.md, "In the cluster"), on the real API server: a
// breaking change (a skill removed, no new major version) is held with spec.changes.breaking
// Enforce, the served ConfigMap unchanged, until the accept annotation names it; with Audit it is
// published and recorded in status.history, with a CardChanged Event and the counter on /metrics.
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ACCEPT_BREAKING_ANNOTATION, configMapName, DATA_KEYS } from '../../operator/api/names.ts';
import {
  condition,
  metricValue,
  operatorMetrics,
  RESOURCE,
  sampleCard,
  waitFor,
  useOperatorInNamespace,
  type AgentCardLive,
} from '../support/operator.ts';

const { api, ns, op } = useOperatorInNamespace('card-changes', { flags: ['--resync', '10m'] });

const forecast = { id: 'forecast', name: 'Forecast', description: 'Gives the forecast', tags: ['weather'] };
const alerts = { id: 'alerts', name: 'Alerts', description: 'Weather alerts for a city', tags: ['weather'] };
const spec = (version: string, skills: unknown[], breaking?: 'Audit' | 'Enforce') => ({
  card: sampleCard(version, { skills }),
  ...(breaking ? { changes: { breaking } } : {}),
});

type History = Array<{ version: string; digest: string; time: string; class?: string }>;
const history = (card: AgentCardLive | undefined) =>
  (card?.status as { history?: History } | undefined)?.history ?? [];

async function published(name: string, version: string): Promise<AgentCardLive> {
  let live: AgentCardLive | undefined;
  await waitFor(`${name} publishing ${version}`, async () => {
    live = await api.getCard(ns.name, name);
    return live?.status?.card?.version === version && condition(live, 'Published')?.status === 'True';
  });
  return live!;
}

const servedCard = async (name: string) =>
  (await api.getConfigMap(ns.name, configMapName(name)))?.data?.[DATA_KEYS.card];

describe('card changes', () => {
  it('Enforce: a skill removed without a new major version is held until the annotation accepts it', async () => {
    await api.createCard(ns.name, 'gated', spec('1.0.0', [forecast, alerts], 'Enforce'));
    const first = await published('gated', '1.0.0');
    const before = await servedCard('gated');
    expect(history(first)).toEqual([
      { version: '1.0.0', digest: first.status!.card!.digest, time: expect.any(String) },
    ]);

    await api.replaceSpec(ns.name, 'gated', spec('1.1.0', [forecast], 'Enforce'));
    let held: AgentCardLive | undefined;
    await waitFor('the change held', async () => {
      held = await api.getCard(ns.name, 'gated');
      return condition(held, 'Published')?.reason === 'BreakingChangeHeld';
    });
    const message = condition(held, 'Published')!.message;
    expect(message).toContain('skills[1]: skill alerts (Alerts) removed');
    expect(message).toContain('the last good card stays published');
    expect(condition(held, 'Ready')).toMatchObject({ status: 'False', reason: 'BreakingChangeHeld' });
    expect(held!.status!.card).toEqual(first.status!.card);
    expect(await servedCard('gated')).toBe(before);

    const digest = new RegExp(`${ACCEPT_BREAKING_ANNOTATION}=(sha256:[0-9a-f]{64})`).exec(message)![1]!;
    await api.custom.patchNamespacedCustomObject(
      {
        ...RESOURCE,
        namespace: ns.name,
        name: 'gated',
        body: { metadata: { annotations: { [ACCEPT_BREAKING_ANNOTATION]: digest } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const accepted = await published('gated', '1.1.0');
    expect(JSON.parse((await servedCard('gated'))!).skills.map((s: { id: string }) => s.id)).toEqual([
      'forecast',
    ]);
    expect(history(accepted).map((e) => [e.version, e.class])).toEqual([
      ['1.1.0', 'breaking'],
      ['1.0.0', undefined],
    ]);
  });

  it('Audit: the same change is published, recorded, reported by an Event and counted', async () => {
    const counted = async () =>
      metricValue(await operatorMetrics(await op.metricsPort()), 'agentcard_card_changes_total', {
        class: 'breaking',
      });
    const countBefore = await counted();
    await api.createCard(ns.name, 'audited', spec('1.0.0', [forecast, alerts]));
    await published('audited', '1.0.0');
    await api.replaceSpec(ns.name, 'audited', spec('1.1.0', [forecast]));
    const live = await published('audited', '1.1.0');
    expect(history(live).map((e) => [e.version, e.class])).toEqual([
      ['1.1.0', 'breaking'],
      ['1.0.0', undefined],
    ]);
    expect(history(live)[0]!.digest).toBe(live.status!.card!.digest);
    await waitFor('the CardChanged Event', async () =>
      (await api.events(ns.name, 'audited')).some(
        (e) => e.reason === 'CardChanged' && e.type === 'Warning' && e.message?.includes('skill alerts'),
      ),
    );
    expect(await counted()).toBe(countBefore + 1);
  });
});
