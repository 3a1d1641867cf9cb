// An adopted card survives an operator restart while its source is down: the operator publishes
// from the agent, stops; the agent stops; the operator starts again. The card last published
// stays the last good state (source/restore.ts): the ConfigMap is not rewritten (its
// resourceVersion and the API server's count of ConfigMap patches), Accepted and Ready keep their
// value and transition time, status.source is unchanged, and SourceAvailable=False names the
// fetch error, through more than one failing fetch round. When the agent comes back with the same
// card, nothing is written but the condition.
//
// Its own operator rather than the shared set-up (useOperatorInNamespace): the operator is stopped
// and started again mid-case, which is the subject.
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import {
  Api,
  condition,
  controllerWrites,
  installCrd,
  metricValue,
  operatorMetrics,
  privateJwk,
  sampleCard,
  startOperator,
  waitFor,
  type InProcessOperator,
} from '../support/operator.ts';

const kc = kubeConfig();
const api = new Api(kc);
let ns: TestNamespace;
let operator: InProcessOperator | undefined;
let agent: http.Server | undefined;
let port = 0;

/** The agent's own card: two skills, the first of which spec.remove drops. */
const agentCard = () =>
  JSON.stringify(
    sampleCard('1.0.0', {
      description: 'an agent card with a system prompt in it',
      supportedInterfaces: [
        { url: `http://127.0.0.1:${port}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ],
      skills: [
        { id: 'internal', name: 'Internal', description: 'not for the public', tags: ['internal'] },
        { id: 'forecast', name: 'Forecast', description: 'Gives the forecast for a city', tags: ['weather'] },
      ],
    }),
  );

const sourceStatus = (card: { status?: unknown } | undefined) =>
  (card?.status as { source?: unknown } | undefined)?.source;

async function startAgent(): Promise<void> {
  agent = http.createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(agentCard());
  });
  // The same port again after a restart of the agent.
  await new Promise<void>((r) => agent!.listen(port, '127.0.0.1', r));
  port = (agent.address() as AddressInfo).port;
}

async function stopAgent(): Promise<void> {
  agent?.closeAllConnections();
  await new Promise((r) => agent?.close(r));
  agent = undefined;
}

/**
 * The agent's port while the agent is down: a listener that resets every connection it accepts
 * and counts them, so the test knows when a fetch round has been made instead of sleeping
 * through one. The operator's fetch reports a reset the same way as a refused connection
 * (SourceUnreachable, "cannot connect (ECONNRESET)"); a port nobody listens on could not be
 * counted.
 */
let down: { server: net.Server; attempts: number } | undefined;

async function startDown(): Promise<void> {
  const state = {
    server: net.createServer((socket) => (state.attempts++, socket.resetAndDestroy())),
    attempts: 0,
  };
  await new Promise<void>((r) => state.server.listen(port, '127.0.0.1', r));
  down = state;
}

async function stopDown(): Promise<void> {
  const server = down?.server;
  down = undefined;
  if (server) await new Promise((r) => server.close(r));
}

const reconciles = async () =>
  metricValue(await operatorMetrics(operator!.metricsPort()), 'agentcard_reconcile_total');

beforeAll(async () => {
  await installCrd(kc);
  ns = await createTestNamespace('adopt-restart');
  await api.putSecret(ns.name, 'signing', { jwk: await privateJwk('restart-1') }, true);
  await startAgent();
  operator = await startOperator(ns.name, [], { probes: true });
}, 120_000);

afterAll(async () => {
  await operator?.stop();
  await stopAgent();
  await stopDown();
  await ns?.cleanup();
});

describe('an adopted card across an operator restart', () => {
  it('keeps the published card and its conditions when the source is down at start', async () => {
    await api.createCard(ns.name, 'echo', {
      source: { url: `http://127.0.0.1:${port}/`, interval: '10s' },
      remove: ['/skills/0'],
      card: { description: 'Forecasts for a city.' },
      signing: { keys: [{ secretRef: { name: 'signing', key: 'jwk' } }] },
      probe: { enabled: false },
    });
    const ready = await waitFor(
      'echo Ready',
      async () => {
        const card = await api.getCard(ns.name, 'echo');
        return condition(card, 'Ready')?.status === 'True' &&
          condition(card, 'SourceAvailable')?.reason === 'Adopted'
          ? card
          : undefined;
      },
      60_000,
    );
    const cm = (await api.getConfigMap(ns.name, 'echo-agent-card'))!;
    const served = JSON.parse(cm.data!['agent-card.json']!) as { description: string; skills: unknown[] };
    expect(served.description).toBe('Forecasts for a city.');
    expect(served.skills).toHaveLength(1);

    await operator!.stop();
    operator = undefined;
    await stopAgent();
    await startDown();
    const before = await controllerWrites(kc);
    operator = await startOperator(ns.name, [], { probes: true });

    const unavailable = await waitFor(
      'SourceAvailable=False after the restart',
      async () => {
        const c = condition(await api.getCard(ns.name, 'echo'), 'SourceAvailable');
        return c?.status === 'False' ? c : undefined;
      },
      60_000,
    );
    expect(unavailable.reason).toBe('SourceUnreachable');
    expect(unavailable.message).toContain('the card last published');
    expect(unavailable.message).toContain('ECONNRESET');
    // One more fetch round (interval 10 s), failing the same way, counted at the agent's port; the
    // fetch is made inside a reconcile (source/tracker.ts), and one card's reconciles never
    // overlap, so the next reconcile to end after the attempt is the one that made it.
    const attempts = down!.attempts;
    expect(attempts).toBeGreaterThanOrEqual(1);
    await waitFor('another fetch of the source', async () => down!.attempts > attempts, 30_000);
    const reconciled = await reconciles();
    await waitFor(
      'the reconcile of that fetch to end',
      async () => (await reconciles()) > reconciled,
      30_000,
    );
    const after = await controllerWrites(kc);
    const live = (await api.getCard(ns.name, 'echo'))!;
    for (const type of ['Accepted', 'Signed', 'Published', 'Ready']) {
      expect(condition(live, type), type).toEqual(condition(ready, type));
    }
    expect(sourceStatus(live)).toEqual(sourceStatus(ready));
    const cmAfter = (await api.getConfigMap(ns.name, 'echo-agent-card'))!;
    expect(cmAfter.metadata?.resourceVersion).toBe(cm.metadata?.resourceVersion);
    // spec.remove was not applied a second time to the card restored from the ConfigMap.
    expect(cmAfter.data).toEqual(cm.data);
    console.log(
      `[figures] restart with the source down: configMap writes ${after.configMaps - before.configMaps}, status writes ${after.status - before.status}`,
    );
    expect(after.configMaps - before.configMaps).toBe(0);
    // The SourceAvailable condition only (Adopted → SourceUnreachable).
    expect(after.status - before.status).toBe(1);

    // The agent comes back with the same card: SourceAvailable only, nothing republished.
    await stopDown();
    await startAgent();
    await waitFor(
      'SourceAvailable=True again',
      async () => condition(await api.getCard(ns.name, 'echo'), 'SourceAvailable')?.status === 'True',
      60_000,
    );
    const back = await controllerWrites(kc);
    expect(back.configMaps - before.configMaps).toBe(0);
    expect((await api.getConfigMap(ns.name, 'echo-agent-card'))!.metadata?.resourceVersion).toBe(
      cm.metadata?.resourceVersion,
    );
    expect(sourceStatus(await api.getCard(ns.name, 'echo'))).toEqual(sourceStatus(ready));
  });
});
