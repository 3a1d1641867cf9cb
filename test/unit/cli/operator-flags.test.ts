import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseOperatorFlags } from '../../../operator/cli/commands/operator.ts';
import { UserError } from '../../../operator/errors.ts';
import { contextNamespace, loadKubeConfig } from '../../../operator/kube/config.ts';

describe('agentcard operator flags', () => {
  it('has the documented defaults', () => {
    const f = parseOperatorFlags([], {});
    expect(f).toMatchObject({
      namespaces: [],
      concurrency: 4,
      resyncMs: 600_000,
      leaderElect: true,
      leaderElectionId: 'agentcard-operator',
      leaseDurationSeconds: 15,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      metricsPort: 8080,
      bindAddress: '0.0.0.0',
      probes: true,
      probeAllowCidrs: [],
      probeConcurrency: 64,
      probeDenyCidrs: [],
      probeStatusRefreshMs: Number.POSITIVE_INFINITY,
      catalogs: true,
      // No sidecar image, no webhook: a bare local run starts.
      webhook: { port: 0, certMode: 'self-signed', sidecarMode: 'auto', shutdownDelayMs: 5_000 },
    });
    expect(f === 'help' ? undefined : f.leaderElectionNamespace).toBeUndefined();
    // Cluster catalogs follow the watched namespaces unless a flag says otherwise.
    expect(f === 'help' ? 'help' : f.clusterCatalogs).toBeUndefined();
    expect(parseOperatorFlags(['--no-catalogs', '--cluster-catalogs'], {})).toMatchObject({
      catalogs: false,
      clusterCatalogs: true,
    });
  });

  it('reads repeatable, negated and environment-defaulted flags', () => {
    const f = parseOperatorFlags(
      [
        '--namespace',
        'a',
        '--namespace',
        'b',
        '--namespace',
        'a',
        '--no-leader-elect',
        '--no-probes',
        '--resync',
        '0',
        '--probe-allow-cidr',
        '10.0.0.0/8',
        '--probe-allow-cidr',
        '127.0.0.1/32',
        '--probe-deny-cidr',
        '100.64.0.0/10',
        '--probe-status-refresh',
        '0',
        '--webhook-port',
        '0',
      ],
      { POD_NAMESPACE: 'ops' },
    );
    expect(f).toMatchObject({
      namespaces: ['a', 'b'],
      leaderElect: false,
      probes: false,
      resyncMs: 0,
      probeAllowCidrs: ['10.0.0.0/8', '127.0.0.1/32'],
      probeDenyCidrs: ['100.64.0.0/10'],
      probeStatusRefreshMs: Number.POSITIVE_INFINITY,
      leaderElectionNamespace: 'ops',
      operatorNamespace: 'ops',
      webhook: { port: 0 },
    });
    expect(parseOperatorFlags(['--help'])).toBe('help');
  });

  it("reads --network-policies and the operator Pods' labels", () => {
    const f = parseOperatorFlags(
      [
        '--policies',
        '--network-policies',
        '--operator-pod-label',
        'app.kubernetes.io/name=agentcard-operator',
        '--operator-pod-label=app.kubernetes.io/component=operator',
      ],
      {},
    );
    if (f === 'help') throw new Error('help');
    expect(f.networkPolicies).toBe(true);
    expect(f.operatorPodLabels).toEqual({
      'app.kubernetes.io/name': 'agentcard-operator',
      'app.kubernetes.io/component': 'operator',
    });
    const off = parseOperatorFlags(['--policies'], {});
    if (off === 'help') throw new Error('help');
    expect(off.networkPolicies).toBeUndefined();
  });

  it('turns the webhook on (port 9443) when a sidecar image is given', () => {
    expect(parseOperatorFlags(['--sidecar-image', 'registry.example/agentcard:1'], {})).toMatchObject({
      webhook: { port: 9443, sidecarImage: 'registry.example/agentcard:1' },
    });
    expect(
      parseOperatorFlags(['--sidecar-image', 'registry.example/agentcard:1', '--webhook-port', '0'], {}),
    ).toMatchObject({ webhook: { port: 0 } });
  });

  it('reads --webhook-shutdown-delay as a duration; 0 closes the webhook at once', () => {
    expect(parseOperatorFlags(['--webhook-shutdown-delay', '3s'], {})).toMatchObject({
      webhook: { shutdownDelayMs: 3_000 },
    });
    expect(parseOperatorFlags(['--webhook-shutdown-delay=0'], {})).toMatchObject({
      webhook: { shutdownDelayMs: 0 },
    });
    expect(parseOperatorFlags(['--webhook-shutdown-delay=20s'], {})).toMatchObject({
      webhook: { shutdownDelayMs: 20_000 },
    });
  });

  it('refuses bad values with a one-line usage error (exit 2)', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--concurrency', '0'], /--concurrency must be an integer from 1 to 256, got "0"/],
      [['--metrics-port', 'http'], /--metrics-port must be an integer/],
      [['--resync', 'soon'], /--resync must be a duration/],
      [['--probe-status-refresh', 'daily'], /--probe-status-refresh must be a duration/],
      [['--probe-deny-cidr', '10.0.0.0/33'], /--probe-deny-cidr: '10\.0\.0\.0\/33' is not a CIDR/],
      [['--probe-allow-cidr', 'cluster'], /--probe-allow-cidr: 'cluster' is not a CIDR/],
      [['--sidecar-mode', 'magic'], /--sidecar-mode must be one of auto, native, container/],
      [['--webhook-cert-mode', 'cert-manager'], /needs --webhook-cert-dir/],
      [['--webhook-port', '9443'], /the admission webhook needs --sidecar-image/],
      [['--webhook-shutdown-delay', 'soon'], /--webhook-shutdown-delay must be a duration/],
      [
        ['--webhook-shutdown-delay', '21s'],
        /--webhook-shutdown-delay must be at most 20s \(well under the Pod's terminationGracePeriodSeconds\), got "21s"/,
      ],
      [['--renew-deadline', '20s'], /--retry-period < --renew-deadline < --lease-duration/],
      [['--network-policies'], /--network-policies needs --policies/],
      [
        ['--operator-pod-label', 'app'],
        /--operator-pod-label must be KEY=VALUE, a Kubernetes label, got "app"/,
      ],
      [['--operator-pod-label', 'app=a b'], /--operator-pod-label must be KEY=VALUE/],
      [['--frobnicate'], /Unknown option '--frobnicate'/],
      [['extra'], /positional/i],
    ];
    for (const [argv, message] of cases) {
      let caught: unknown;
      try {
        parseOperatorFlags(argv, {});
      } catch (err) {
        caught = err;
      }
      expect(caught, argv.join(' ')).toBeInstanceOf(UserError);
      expect((caught as UserError).exitCode).toBe(2);
      expect((caught as UserError).message).toMatch(message);
      expect((caught as UserError).message).not.toContain('\n');
    }
  });
});

describe('kubeconfig loading', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kc-'));
  const file = join(dir, 'config');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }],
      users: [{ name: 'u', user: { token: 'x' } }],
      contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'team' } }],
      'current-context': 'ctx',
    }),
  );

  it('loads --kubeconfig and reports the context namespace', () => {
    const kc = loadKubeConfig({ kubeconfig: file, env: {} });
    expect(kc.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
    expect(contextNamespace(kc)).toBe('team');
  });

  it('names a missing file in a one-line error', () => {
    expect(() => loadKubeConfig({ kubeconfig: join(dir, 'nope'), env: {} })).toThrow(
      /kubeconfig file .*nope does not exist/,
    );
  });

  it('refuses a kubeconfig without a current cluster', () => {
    const empty = join(dir, 'empty');
    writeFileSync(
      empty,
      JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [], users: [], contexts: [] }),
    );
    expect(() => loadKubeConfig({ kubeconfig: empty, env: {} })).toThrow(/has no current cluster/);
  });
});
