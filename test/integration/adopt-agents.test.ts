// Adopting the card a real A2A agent serves (spec.source) on the real control plane: the
// @a2a-js/sdk server's card endpoint, and a Go agent built with a2a-go v0.3.3 that serves a 0.3
// card. Each is adopted, fixed by the overlay, probed, and followed when it changes. Sources that
// go wrong, and the writes they cost, are in adopt-source.test.ts (a serial file: it counts the
// API server's writes); this file counts nothing server-wide, so it runs beside the others.
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { describe, expect, it } from 'vitest';
import type { AgentCard } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { startGoAgent, type GoAgent } from '../support/go-agent.ts';
import { condition, useOperatorInNamespace, waitFor, type AgentCardLive } from '../support/operator.ts';

// ---- a real @a2a-js/sdk agent whose card the test can change -----------------------------------

let jsCardVersion = '1.0.0';
let jsServer: http.Server;
let jsBase = '';

function jsCard(): AgentCard {
  return {
    name: 'js-agent',
    description: 'TODO: describe me', // what the overlay fixes
    version: jsCardVersion,
    supportedInterfaces: [
      { url: `${jsBase}/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    ],
    provider: undefined,
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'echo',
        name: 'Echo',
        description: 'Echoes',
        tags: ['echo'],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

async function startJsAgent(): Promise<void> {
  const executor: AgentExecutor = { execute: async () => {}, cancelTask: async () => {} };
  const app = express();
  jsServer = http.createServer(app);
  await new Promise<void>((r) => jsServer.listen(0, '127.0.0.1', r));
  jsBase = `http://127.0.0.1:${(jsServer.address() as AddressInfo).port}`;
  const handler = new DefaultRequestHandler(jsCard(), new InMemoryTaskStore(), executor);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => jsCard() }));
  app.use('/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
}

let jsAgentGo: GoAgent;
const versionFile = join(mkdtempSync(join(tmpdir(), 'go-agent-')), 'version');

const { api, ns } = useOperatorInNamespace('adopt-agents', {
  probes: true,
  before: async () => {
    await startJsAgent();
    writeFileSync(versionFile, '1.0.0');
    jsAgentGo = await startGoAgent(versionFile);
  },
  after: async () => {
    await jsAgentGo?.stop();
    jsServer?.closeAllConnections();
    await new Promise((r) => jsServer?.close(r));
  },
});

const published = (name: string) => api.publishedCard(ns.name, name);

describe('adopting the card a real agent serves', () => {
  it('adopts the @a2a-js/sdk server card, fixes it with the overlay, probes it, and follows its changes', async () => {
    // The ten-line AgentCard of docs/adopt.md.
    await api.createCard(ns.name, 'js', {
      source: { url: `${jsBase}/`, interval: '10s' },
      remove: ['/skills/0/examples'],
      card: {
        description: 'Echoes what it is sent.',
        provider: { organization: 'Example', url: 'https://example.com' },
      },
      probe: { interval: '10s' },
    });
    const card = await waitFor(
      'js Ready',
      async () => {
        const c = await api.getCard(ns.name, 'js');
        return condition(c, 'Ready')?.status === 'True' ? c : undefined;
      },
      60_000,
    );
    expect(condition(card, 'SourceAvailable')).toMatchObject({ status: 'True', reason: 'Adopted' });
    expect(condition(card, 'InterfacesReachable')).toMatchObject({ status: 'True' });
    const status = card.status as Record<string, Record<string, unknown>>;
    expect(status.source).toMatchObject({
      url: `${jsBase}/.well-known/agent-card.json`,
      protocolVersion: '1.0',
      digest: expect.stringMatching(/^sha256:/),
    });
    const served = await published('js');
    expect(served).toMatchObject({
      name: 'js-agent',
      description: 'Echoes what it is sent.',
      version: '1.0.0',
      provider: { organization: 'Example', url: 'https://example.com' },
    });
    expect((served!.skills as Array<Record<string, unknown>>)[0]).not.toHaveProperty('examples');

    // The agent's card changes: the published card follows (after the confirming fetch), with an Event.
    const changedAt = Date.now();
    jsCardVersion = '1.1.0';
    await waitFor(
      'the new version published',
      async () => (await published('js'))?.version === '1.1.0',
      60_000,
    );
    const reachedMs = Date.now() - changedAt;
    console.log(`[figures] source change to published card: ${reachedMs} ms (interval 10s)`);
    expect(reachedMs).toBeLessThan(45_000);
    // The status follows the ConfigMap (the operator writes the card first, then the status).
    const source = await waitFor('the change counted in status.source', async () => {
      const live = (await api.getCard(ns.name, 'js')) as AgentCardLive;
      const s = (live.status as Record<string, Record<string, unknown>>).source;
      return s?.changes !== undefined ? s : undefined;
    });
    expect(source).toMatchObject({ changes: 1 });
    await waitFor('a SourceChanged event', async () =>
      (await api.events(ns.name, 'js')).some((e) => e.reason === 'SourceChanged'),
    );
  });

  it('adopts the 0.3 card of a Go agent built with a2a-go, converted to 1.0, and probes it', async () => {
    await api.createCard(ns.name, 'go', {
      source: { url: `${jsAgentGo.base}/.well-known/agent-card.json`, interval: '10s' },
      card: { provider: { organization: 'Example', url: 'https://example.com' } },
      probe: { interval: '10s' },
    });
    const card = await waitFor(
      'go published and probed',
      async () => {
        const c = await api.getCard(ns.name, 'go');
        const reach = condition(c, 'InterfacesReachable');
        return condition(c, 'Published')?.status === 'True' && reach && reach.status !== 'Unknown'
          ? c
          : undefined;
      },
      60_000,
    );
    expect((card.status as Record<string, Record<string, unknown>>).source).toMatchObject({
      protocolVersion: '0.3',
    });
    const served = await published('go');
    expect(served).toMatchObject({
      name: 'Go Hello Agent',
      supportedInterfaces: [
        { url: `${jsAgentGo.base}/invoke`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
    });
    expect(served).not.toHaveProperty('url');
    expect(condition(card, 'InterfacesReachable')).toMatchObject({ status: 'True' });
    writeFileSync(versionFile, '2.0.0');
    await waitFor(
      'the Go agent version published',
      async () => (await published('go'))?.version === '2.0.0',
      60_000,
    );
  });
});
