// The reconciles of the adoption and issuer controllers, whose logic is more than their pure
// plans: what they write (through the runtime's Writer) for what the runtime's real cache holds,
// with the API server an in-memory double (test/support/memory-api.ts). What the real API server
// and cert-manager do with those writes is what test/integration/adoption.test.ts,
// issuer-ref.test.ts and issuer-ref-no-cert-manager.test.ts check.
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ADOPT_LABEL, ADOPT_PORT_ANNOTATION, signingCertificateName } from '../../../operator/api/names.ts';
import { DEFAULT_IDENTITY_TEMPLATE } from '../../../operator/card/identity.ts';
import {
  ADOPTION_FIELD_MANAGER,
  AdoptionController,
} from '../../../operator/controllers/adoption/controller.ts';
import { desiredAdoptedCard, type AdoptionPolicy } from '../../../operator/controllers/adoption/plan.ts';
import { IssuerController } from '../../../operator/controllers/issuer/controller.ts';
import { desiredCertificate } from '../../../operator/controllers/issuer/plan.ts';
import { ApiError } from '../../../operator/kube/client.ts';
import { Cache } from '../../../operator/runtime/cache.ts';
import {
  adoptableWorkloads,
  AGENT_CARDS,
  OWNED_CERTIFICATES,
} from '../../../operator/controllers/cache/collections.ts';
import { Channel } from '../../../operator/runtime/channel.ts';
import { memoryApi, quietLog, type MemoryApi } from '../../support/memory-api.ts';
import { sampleCard } from '../../support/cards.ts';

const CARDS = '/apis/agentcard.dev/v1alpha1';
const NS = 'team';
const signal = new AbortController().signal;
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function startCache(api: MemoryApi): Promise<Cache> {
  const cache = new Cache({ client: api.client, log: quietLog, namespaces: [NS] });
  return cache;
}

async function run(cache: Cache, informers: Array<{ waitForSync(s: AbortSignal): Promise<void> }>) {
  const stop = new AbortController();
  const runnable = cache.runnable();
  void runnable.start(stop.signal);
  stops.push(async () => {
    stop.abort();
    await runnable.stop();
  });
  await Promise.all(informers.map((i) => i.waitForSync(signal)));
}

describe('the adoption reconcile', () => {
  const deployment = (labels: Record<string, string> = { [ADOPT_LABEL]: 'true' }) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'weather',
      namespace: NS,
      uid: 'dep-uid',
      resourceVersion: '1',
      labels,
      annotations: { [ADOPT_PORT_ANNOTATION]: '9999' },
    },
    spec: { template: {} },
  });
  const adopted = () => {
    const plan = desiredAdoptedCard({ ...deployment(), kind: 'Deployment' });
    if (!plan.ok) throw new Error(plan.problem);
    return { ...plan.card, metadata: { ...plan.card.metadata, uid: 'card-uid', resourceVersion: '1' } };
  };

  async function adoption(
    api: MemoryApi,
    policy: AdoptionPolicy = { namespaces: [NS] },
  ): Promise<{ controller: AdoptionController; writes: string[] }> {
    api.served.set(CARDS, ['agentcards']);
    api.served.set('/apis/apps/v1', ['deployments', 'statefulsets']);
    const cache = await startCache(api);
    const writes: string[] = [];
    const controller = new AdoptionController({
      client: api.client,
      log: quietLog,
      cache,
      runtime: { log: quietLog },
      policy,
      resyncMs: 600_000,
      onWrite: (r) => writes.push(r),
    });
    await run(cache, [cache.informer(AGENT_CARDS), cache.informer(adoptableWorkloads('Deployment'))]);
    return { controller, writes };
  }

  it('applies the card of a labelled workload, under its own field manager, owned by the workload', async () => {
    const api = memoryApi();
    api.items.set(`/apis/apps/v1/namespaces/${NS}/deployments`, [deployment()]);
    const { controller, writes } = await adoption(api);
    await controller.reconcile(`Deployment/${NS}/weather`, signal);
    expect(api.writes).toHaveLength(1);
    const [w] = api.writes;
    expect(w).toMatchObject({
      method: 'PATCH',
      path: `${CARDS}/namespaces/${NS}/agentcards/weather`,
      query: { fieldManager: ADOPTION_FIELD_MANAGER, force: true },
    });
    const body = w!.body as KubernetesObject;
    expect(body.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Deployment', name: 'weather', uid: 'dep-uid', controller: true }),
    ]);
    expect(writes).toEqual(['agentcard']);
  });

  it('writes nothing for a card already as desired, or one of the same name it does not own', async () => {
    const api = memoryApi();
    api.items.set(`/apis/apps/v1/namespaces/${NS}/deployments`, [deployment()]);
    api.items.set(`${CARDS}/namespaces/${NS}/agentcards`, [adopted()]);
    const { controller } = await adoption(api);
    await controller.reconcile(`Deployment/${NS}/weather`, signal);
    expect(api.writes).toEqual([]);

    const other = memoryApi();
    other.items.set(`/apis/apps/v1/namespaces/${NS}/deployments`, [deployment()]);
    const foreign = { ...adopted(), metadata: { ...adopted().metadata, ownerReferences: [] } };
    other.items.set(`${CARDS}/namespaces/${NS}/agentcards`, [foreign]);
    const second = await adoption(other);
    await second.controller.reconcile(`Deployment/${NS}/weather`, signal);
    expect(other.writes).toEqual([]);
  });

  it('deletes the adopted card, by its UID, when the label goes or the namespace is not allowed', async () => {
    for (const { policy, workloads } of [
      { policy: { namespaces: [NS] }, workloads: [] },
      { policy: { namespaces: [] }, workloads: [deployment()] },
    ]) {
      const api = memoryApi();
      api.items.set(`/apis/apps/v1/namespaces/${NS}/deployments`, workloads);
      api.items.set(`${CARDS}/namespaces/${NS}/agentcards`, [adopted()]);
      const { controller, writes } = await adoption(api, policy);
      await controller.reconcile(`Deployment/${NS}/weather`, signal);
      expect(api.writes).toEqual([
        {
          method: 'DELETE',
          path: `${CARDS}/namespaces/${NS}/agentcards/weather`,
          body: { preconditions: { uid: 'card-uid' } },
        },
      ]);
      expect(writes).toEqual(['agentcard']);
    }
  });

  it('keeps a card whose workload it cannot adopt as it was (no port annotation)', async () => {
    const api = memoryApi();
    const noPort = deployment();
    noPort.metadata.annotations = {} as typeof noPort.metadata.annotations;
    api.items.set(`/apis/apps/v1/namespaces/${NS}/deployments`, [noPort]);
    api.items.set(`${CARDS}/namespaces/${NS}/agentcards`, [adopted()]);
    const { controller } = await adoption(api);
    await controller.reconcile(`Deployment/${NS}/weather`, signal);
    expect(api.writes).toEqual([]);
  });
});

describe('the issuer reconcile', () => {
  const CERTS = '/apis/cert-manager.io/v1';
  const card = (issuer = true) => ({
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentCard',
    metadata: { name: 'recipes', namespace: NS, uid: 'card-uid', resourceVersion: '1', generation: 1 },
    spec: {
      card: sampleCard(),
      signing: { keys: [issuer ? { issuerRef: { name: 'ca' } } : { secretRef: { name: 'k', key: 'jwk' } }] },
    },
  });
  const identity = `spiffe://example.org/ns/${NS}/sa/default`;
  const certificate = (overrides: { uid?: string; dnsNames?: string[] } = {}) => {
    const want = desiredCertificate({
      card: { namespace: NS, name: 'recipes', uid: overrides.uid ?? 'card-uid' },
      identity,
      issuerRef: { name: 'ca', kind: 'Issuer', group: 'cert-manager.io' },
    });
    return {
      ...want,
      metadata: { ...want.metadata, uid: 'cert-uid', resourceVersion: '7' },
      spec: { ...want.spec, ...(overrides.dnsNames ? { dnsNames: overrides.dnsNames } : {}) },
    };
  };

  async function issuer(api: MemoryApi, certManager = true) {
    api.served.set(CARDS, ['agentcards']);
    api.served.set(CERTS, certManager ? ['certificates'] : []);
    const cache = await startCache(api);
    const woken: string[] = [];
    const wake = new Channel();
    wake.subscribe((key) => woken.push(key));
    const controller = new IssuerController({
      client: api.client,
      log: quietLog,
      cache,
      runtime: { log: quietLog },
      policy: { trustDomain: 'example.org', template: DEFAULT_IDENTITY_TEMPLATE },
      resyncMs: 600_000,
      cardWake: wake,
    });
    const certs = cache.informer(OWNED_CERTIFICATES);
    await run(cache, [certs, cache.informer(AGENT_CARDS)]);
    return { controller, woken };
  }

  it('without cert-manager: writes nothing, and tells the card controller why', async () => {
    const api = memoryApi();
    api.items.set(`${CARDS}/namespaces/${NS}/agentcards`, [card()]);
    const { controller, woken } = await issuer(api, false);
    await controller.reconcile(`${NS}/recipes`, signal);
    expect(api.writes).toEqual([]);
    expect(woken).toEqual([`${NS}/recipes`]);
    expect(controller.issuance(`${NS}/recipes`)).toMatchObject({
      sign: false,
      reason: 'CertificateNotRequested',
      message: expect.stringContaining("cert-manager's Certificate API is not served"),
    });
  });

  it('creates the Certificate a card asks for, and says it is pending', async () => {
    const api = memoryApi();
    api.items.set(`${CARDS}/namespaces/${NS}/agentcards`, [card()]);
    const { controller, woken } = await issuer(api);
    await controller.reconcile(`${NS}/recipes`, signal);
    expect(api.writes.map((w) => `${w.method} ${w.path}`)).toEqual([
      `POST ${CERTS}/namespaces/${NS}/certificates`,
    ]);
    expect((api.writes[0]!.body as KubernetesObject).metadata?.name).toBe(signingCertificateName('recipes'));
    expect(woken).toEqual([`${NS}/recipes`]);
    expect(controller.issuance(`${NS}/recipes`)).toMatchObject({
      sign: true,
      reason: 'CertificatePending',
      identity,
    });
  });

  it('puts a Certificate edited by hand back whole, and leaves one it does not own alone', async () => {
    const api = memoryApi();
    api.items.set(`${CARDS}/namespaces/${NS}/agentcards`, [card()]);
    api.items.set(`${CERTS}/namespaces/${NS}/certificates`, [certificate({ dnsNames: ['evil.example'] })]);
    const { controller } = await issuer(api);
    await controller.reconcile(`${NS}/recipes`, signal);
    expect(api.writes.map((w) => `${w.method} ${w.path}`)).toEqual([
      `PUT ${CERTS}/namespaces/${NS}/certificates/${signingCertificateName('recipes')}`,
    ]);
    expect((api.writes[0]!.body as { spec: { dnsNames?: string[] } }).spec.dnsNames).toBeUndefined();

    const other = memoryApi();
    other.items.set(`${CARDS}/namespaces/${NS}/agentcards`, [card()]);
    other.items.set(`${CERTS}/namespaces/${NS}/certificates`, [certificate({ uid: 'someone-else' })]);
    const second = await issuer(other);
    await second.controller.reconcile(`${NS}/recipes`, signal);
    expect(other.writes).toEqual([]);
    expect(second.controller.issuance(`${NS}/recipes`)?.message).toContain('is not owned by this AgentCard');
  });

  it('deletes its Certificate, by UID, once the card names no issuer; a 404 is taken as done', async () => {
    const api = memoryApi();
    api.items.set(`${CARDS}/namespaces/${NS}/agentcards`, [card(false)]);
    api.items.set(`${CERTS}/namespaces/${NS}/certificates`, [certificate()]);
    api.answer = () => {
      throw new ApiError(404, { message: 'gone' });
    };
    const { controller } = await issuer(api);
    await expect(controller.reconcile(`${NS}/recipes`, signal)).resolves.toBeUndefined();
    expect(api.writes).toEqual([
      {
        method: 'DELETE',
        path: `${CERTS}/namespaces/${NS}/certificates/${signingCertificateName('recipes')}`,
        body: { preconditions: { uid: 'cert-uid' } },
      },
    ]);
  });
});
