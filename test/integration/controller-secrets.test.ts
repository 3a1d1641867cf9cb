// Secrets that arrive after their AgentCard, unlabelled, created by another tool (kubectl here,
// as Argo CD, Flux or External Secrets would): the card is signed within seconds, with no help
// from the periodic resync (10 minutes in this test).
import { describe, expect, it } from 'vitest';
import { kubeconfigPath } from '../support/cluster.ts';
import { runTool } from '../support/tools.ts';
import { condition, privateJwk, sampleCard, waitFor, useOperatorInNamespace } from '../support/operator.ts';

const { api, ns } = useOperatorInNamespace('controller-secrets', { flags: ['--resync', '10m'] });

/** `kubectl apply` of an unlabelled Secret holding `jwk`. */
async function kubectlApplySecret(name: string, jwk: string): Promise<void> {
  const manifest = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns.name },
    stringData: { jwk },
  });
  const result = await runTool('kubectl', ['apply', '-f', '-'], {
    kubeconfig: kubeconfigPath(),
    input: manifest,
  });
  expect(result.code, result.stderr).toBe(0);
}

describe('a signing Secret created after its AgentCard', () => {
  it('is picked up within 30 s, unlabelled, from kubectl; so is its rotation; Signed says what is true', async () => {
    await api.createCard(ns.name, 'gitops', {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ secretRef: { name: 'gitops-key', key: 'jwk' } }] },
    });
    const waiting = await waitFor('Signed=False SigningKeyNotFound', async () => {
      const card = await api.getCard(ns.name, 'gitops');
      return condition(card, 'Signed')?.reason === 'SigningKeyNotFound' ? card : undefined;
    });
    expect(condition(waiting, 'Signed')!.message).toMatch(
      /Secret "gitops-key" not found in namespace .*; the card is signed as soon as it exists/,
    );
    expect(condition(waiting, 'Published')).toMatchObject({ status: 'False', reason: 'NotPublished' });
    expect(await api.getConfigMap(ns.name, 'gitops-agent-card')).toBeUndefined();

    const created = Date.now();
    await kubectlApplySecret('gitops-key', await privateJwk('g1'));
    // The waits outlast the 30 s bound, so a slow pick-up fails on the bound, with the time it took,
    // instead of restating the bound as a timeout.
    const signed = await waitFor(
      'Signed=True after the Secret appeared',
      async () => {
        const card = await api.getCard(ns.name, 'gitops');
        return condition(card, 'Signed')?.status === 'True' ? card : undefined;
      },
      60_000,
    );
    const signedMs = Date.now() - created;
    expect(signedMs).toBeLessThan(30_000);
    expect(condition(signed, 'Signed')!.message).toBe('signed with g1 (ES256)');
    expect(signed.status?.signatures).toEqual([{ kid: 'g1', alg: 'ES256' }]);
    expect(await api.getConfigMap(ns.name, 'gitops-agent-card')).toBeDefined();

    // A rotation of the unlabelled Secret re-signs within seconds too (no resync in 10 minutes).
    const rotated = Date.now();
    await kubectlApplySecret('gitops-key', await privateJwk('g2'));
    await waitFor(
      'kid g2 after the rotation',
      async () => (await api.getCard(ns.name, 'gitops'))?.status?.signatures?.[0]?.kid === 'g2',
      60_000,
    );
    const rotatedMs = Date.now() - rotated;
    expect(rotatedMs).toBeLessThan(30_000);
    console.info(
      `unlabelled Secret: signed ${signedMs} ms after it appeared, re-signed ${rotatedMs} ms after rotation`,
    );

    // The Secret goes: the card says so (and keeps the last good card published).
    await api.core.deleteNamespacedSecret({ namespace: ns.name, name: 'gitops-key' });
    const gone = await waitFor('Signed=False after the Secret was deleted', async () => {
      const card = await api.getCard(ns.name, 'gitops');
      return condition(card, 'Signed')?.reason === 'SigningKeyNotFound' ? card : undefined;
    });
    expect(condition(gone, 'Signed')!.message).toContain('the last good card stays published');
    expect(condition(gone, 'Published')!.status).toBe('True');
  });
});
