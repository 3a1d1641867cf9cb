// `agentcard policy check`, the real command: exit codes by mode, what each line names (mode,
// policy, rule, JSON path, message), facts not known offline reported as not evaluated, an
// invalid policy refused as a whole before any card is judged, and the JSON output.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { agentcard, tempDir } from '../../support/cli.ts';
import { minimalCard } from '../../support/cards.ts';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

function write(name: string, docs: unknown[]): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, docs.map((d) => stringify(d)).join('---\n'));
  return path;
}

const manifest = (name: string, spec: Record<string, unknown>, namespace = 'payments') => ({
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'AgentCard',
  metadata: { name, namespace },
  spec,
});
const cardWithUrl = (url: string) => {
  const c = minimalCard() as { supportedInterfaces: Array<{ url: string }> };
  c.supportedInterfaces[0]!.url = url;
  return c;
};
const clusterPolicy = (name: string, mode: string, rules: unknown[]) => ({
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'ClusterAgentPolicy',
  metadata: { name },
  spec: { mode, rules },
});
const https = {
  name: 'https-only',
  message: 'Every A2A interface must use https',
  content: { allowedSchemes: ['https'] },
};
const signer = {
  name: 'own-namespace',
  message: 'Signed by an identity of its own namespace',
  trust: { signerIdentities: ['spiffe://example.org/ns/{namespace}/*'] },
};

const httpCard = write('cards/http.yaml', [
  manifest('pay', { card: cardWithUrl('http://pay.payments.svc/a2a') }),
]);
const httpsCard = write('cards/https.yaml', [
  manifest('shop', { card: cardWithUrl('https://shop.example.com/a2a') }),
]);

describe('agentcard policy check', () => {
  it('an Enforce rule that fails: exit 1, the line names mode, policy, rule, path and message', async () => {
    const policy = write('enforce.yaml', [clusterPolicy('platform', 'Enforce', [https])]);
    const r = await agentcard(['policy', 'check', '-f', join(dir, 'cards'), '--policy', policy]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    expect(r.stdout.split('\n')).toEqual([
      `${httpCard}: AgentCard pay (namespace payments): fails (Enforce) (1 policy)`,
      '  Enforce  ClusterAgentPolicy platform, rule https-only: spec.card.supportedInterfaces[0].url: Every A2A interface must use https; scheme "http" is not allowed (allowed: https)',
      `${httpsCard}: AgentCard shop (namespace payments): complies (1 policy)`,
      '',
    ]);
  });

  it('the same rule in Warn mode: reported, exit 0', async () => {
    const policy = write('warn.yaml', [clusterPolicy('platform', 'Warn', [https])]);
    const r = await agentcard(['policy', 'check', '-f', httpCard, '-p', policy]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('fails (Warn)');
    expect(r.stdout).toContain(
      '  Warn     ClusterAgentPolicy platform, rule https-only: spec.card.supportedInterfaces[0].url:',
    );
  });

  it('a signer rule on a card with spec.signing is not evaluated offline (not passed); without spec.signing it fails', async () => {
    const policy = write('signer.yaml', [clusterPolicy('trust', 'Enforce', [signer])]);
    const signed = write('signed.yaml', [
      manifest('signed', {
        card: cardWithUrl('https://pay.example.com/a2a'),
        signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] },
      }),
    ]);
    const r = await agentcard(['policy', 'check', '-f', signed, '--policy', policy]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('AgentCard signed (namespace payments): complies (1 policy)');
    expect(r.stdout).toMatch(
      / {2}not evaluated {2}ClusterAgentPolicy trust, rule own-namespace: the signer's identity is known only/,
    );
    const unsigned = await agentcard(['policy', 'check', '-f', httpsCard, '--policy', policy]);
    expect(unsigned.code).toBe(1);
    expect(unsigned.stdout).toContain(
      'Enforce  ClusterAgentPolicy trust, rule own-namespace: spec.signing: Signed by an identity of its own namespace; the card is not signed, so it has no signer identity',
    );
  });

  it('an invalid policy stops the run (exit 2) naming the file, the policy and the field; no card is judged', async () => {
    // A valid policy next to it is not used either: the policy input is refused as a whole.
    write('bad/good.yaml', [clusterPolicy('good', 'Enforce', [https])]);
    const bad = write('bad/bad.yaml', [
      clusterPolicy('bad', 'Enforce', [
        { name: 'r', message: 'm', trust: { signerIdentities: ['spiffe://example.org/ns/{team}/*'] } },
      ]),
    ]);
    const r = await agentcard(['policy', 'check', '-f', httpCard, '--policy', join(dir, 'bad')]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n')).toEqual([
      `agentcard: ${bad} (ClusterAgentPolicy bad): spec.rules[0].trust.signerIdentities[0]: unknown variable {team} (only {namespace} is known)`,
      'agentcard: invalid policy input (1 problem); no card was judged',
      '',
    ]);
  });

  it('policies select by namespace: an AgentPolicy of another namespace does not apply; --namespace sets the default', async () => {
    const policy = write('ns.yaml', [
      {
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'AgentPolicy',
        metadata: { name: 'web', namespace: 'web' },
        spec: { mode: 'Enforce', rules: [https] },
      },
    ]);
    const other = await agentcard(['policy', 'check', '-f', httpCard, '--policy', policy]);
    expect(other.code).toBe(0);
    expect(other.stdout).toContain('AgentCard pay (namespace payments): no policy selects it');
    const bare = write('bare.json', [cardWithUrl('http://pay.web.svc/a2a')]);
    const inWeb = await agentcard(['policy', 'check', '-f', bare, '--policy', policy, '--namespace', 'web']);
    expect(inWeb.code).toBe(1);
    expect(inWeb.stdout).toContain('AgentPolicy web/web, rule https-only: supportedInterfaces[0].url:');
  });

  it("an adopted card: content rules are not evaluated without the agent's card; JSON output", async () => {
    const policy = write('adopt-policy.yaml', [clusterPolicy('platform', 'Enforce', [https])]);
    const adopted = write('adopted.yaml', [
      manifest('adopted', { source: { url: 'https://agent.example.com/' } }),
    ]);
    const r = await agentcard(['policy', 'check', '-f', adopted, '--policy', policy, '-o', 'json']);
    expect(r.code).toBe(0);
    const [report] = JSON.parse(r.stdout);
    expect(report).toMatchObject({
      kind: 'AgentCard',
      name: 'adopted',
      status: 'compliant',
      failures: [],
      notEvaluated: [
        {
          policy: 'ClusterAgentPolicy platform',
          rule: 'https-only',
          reason: expect.stringMatching(/spec\.source/),
        },
      ],
    });
    expect(report.policies[0].rules[0].verdict).toBe('NotEvaluated');
  });

  it('usage errors: no policy, an unknown subcommand, a bad label', async () => {
    expect((await agentcard(['policy', 'check', '-f', httpCard])).code).toBe(2);
    const unknown = await agentcard(['policy', 'apply']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("agentcard: unknown policy command 'apply' (known: check)\n");
    const label = await agentcard([
      'policy',
      'check',
      '-f',
      httpCard,
      '-p',
      join(dir, 'warn.yaml'),
      '--namespace-label',
      'nolabel',
    ]);
    expect(label.stderr).toBe('agentcard: --namespace-label must be KEY=VALUE, not "nolabel"\n');
  });
});
