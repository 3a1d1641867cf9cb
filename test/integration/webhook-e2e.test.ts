/**
 * End to end with local processes: an AgentCard applied to the real API server -> the controller
 * publishes its ConfigMap -> the ConfigMap's files laid out as the kubelet lays out the volume ->
 * the real `agentcard sidecar` serves a card that @a2a-js/sdk verifies; a spec change reaches the
 * sidecar the same way.
 */
import { rm } from 'node:fs/promises';
import { verifyAgentCardSignature } from '@a2a-js/sdk';
import type { AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { describe, expect, it } from 'vitest';
import { kubeletWrite, tempDir } from '../support/card-files.ts';
import { spawnSidecar } from '../support/sidecar-process.ts';
import type { Running } from '../support/sidecar-process.ts';
import { privateJwk, sampleCard, useOperatorInNamespace, waitFor } from '../support/operator.ts';

let dir: string;
let sidecar: Running;
const { api, ns } = useOperatorInNamespace('sidecar-e2e', {
  before: async () => {
    dir = await tempDir();
  },
  after: async () => {
    if (sidecar && sidecar.child.exitCode === null) {
      sidecar.child.kill('SIGTERM');
      await sidecar.exited;
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  },
});

const spec = (version: string) => ({
  card: sampleCard(version),
  signing: { keys: [{ secretRef: { name: 'card-key', key: 'jwk' } }] },
  serving: { cacheMaxAgeSeconds: 60 },
});

/** The ConfigMap's data once it carries the card of `version`. */
async function published(version: string): Promise<Record<string, string>> {
  return waitFor(`ConfigMap with version ${version}`, async () => {
    const cm = await api.getConfigMap(ns.name, 'weather-agent-card');
    const data = cm?.data;
    if (!data?.['agent-card.json']) return undefined;
    return (JSON.parse(data['agent-card.json']) as { version: string }).version === version
      ? data
      : undefined;
  });
}

async function fetchCard(): Promise<{ card: SdkAgentCard; text: string; cacheControl: string | null }> {
  const res = await fetch(`http://127.0.0.1:${sidecar.port}/.well-known/agent-card.json`);
  const text = await res.text();
  return { card: JSON.parse(text) as SdkAgentCard, text, cacheControl: res.headers.get('cache-control') };
}

async function verifiesWithSdk(card: SdkAgentCard): Promise<boolean> {
  const jwks = (await (await fetch(`http://127.0.0.1:${sidecar.port}/.well-known/jwks.json`)).json()) as {
    keys: { kid: string }[];
  };
  const verify = verifyAgentCardSignature(async (kid) => {
    const key = jwks.keys.find((k) => k.kid === kid);
    if (!key) throw new Error(`no key ${kid}`);
    return key;
  });
  return verify(card).then(
    () => true,
    () => false,
  );
}

describe('AgentCard -> ConfigMap -> kubelet volume -> sidecar -> @a2a-js/sdk', () => {
  it('serves the published card, which the SDK resolves and verifies', async () => {
    await api.putSecret(ns.name, 'card-key', { jwk: await privateJwk('k1') }, true);
    await api.createCard(ns.name, 'weather', spec('1.0.0'));
    const data = await published('1.0.0');
    await kubeletWrite(dir, data);
    sidecar = await spawnSidecar(dir);

    const { card, text, cacheControl } = await fetchCard();
    expect(text).toBe(data['agent-card.json']); // the published bytes, exactly
    expect(cacheControl).toBe('public, max-age=60');
    expect(await verifiesWithSdk(card)).toBe(true);
    const resolved = await new DefaultAgentCardResolver().resolve(`http://127.0.0.1:${sidecar.port}`);
    expect(resolved.version).toBe('1.0.0');
  });

  it('carries a spec change through to the sidecar', async () => {
    await api.replaceSpec(ns.name, 'weather', spec('1.1.0'));
    const data = await published('1.1.0');
    await kubeletWrite(dir, data);
    const card = await waitFor(
      'the sidecar serving 1.1.0',
      async () => {
        const { card } = await fetchCard();
        return card.version === '1.1.0' ? card : undefined;
      },
      2_000,
    );
    expect(await verifiesWithSdk(card)).toBe(true);
  });
});
