/**
 * The command line the chart gives the operator is one `agentcard operator` accepts, in every
 * main combination of values (the flags are parsed by the operator's own parser).
 */
import { describe, expect, it } from 'vitest';
import { parseOperatorFlags } from '../../../operator/cli/commands/operator.ts';
import { render } from './chart.ts';

type PodSpec = {
  volumes?: { name: string; configMap?: { name: string; items?: { key: string; path: string }[] } }[];
  containers: { name: string; volumeMounts?: { name: string; mountPath: string }[] }[];
};

type Deployment = {
  spec: { template: { spec: { containers: { name: string; args: string[] }[] } } };
};

const combos: Record<string, Record<string, unknown>> = {
  defaults: {},
  'namespace-scoped': { watchNamespaces: ['team-a', 'team-b'] },
  'named Secrets only': { rbac: { secretNames: ['agent-signing-key', 'probe-token'] } },
  'cert-manager': { webhook: { certificate: { mode: 'cert-manager' } } },
  'no webhook, no probes, no leader election': {
    webhook: { enabled: false },
    probes: { enabled: false },
    leaderElection: { enabled: false },
    replicas: 1,
  },
  'probe allow-list and a forced sidecar mode': {
    probes: { allowCidrs: ['10.0.0.0/8'], concurrency: 16 },
    sidecar: { mode: 'native' },
  },
  'the Node sidecar, trusting X-Forwarded-Host': {
    sidecar: { server: 'node', trustForwardedHost: true },
  },
  'probe CA bundle from a ConfigMap': {
    probes: { caBundle: { configMap: 'internal-ca', key: 'bundle.pem' } },
  },
  'signing certificates from cert-manager, with a trust domain': {
    certManager: { enabled: true, trustDomain: 'example.org' },
  },
  'the webhook closed at once on SIGTERM': { webhook: { shutdownDelaySeconds: 0 } },
  'probe deny-list, lastProbeTime refreshed every 10 minutes': {
    probes: { denyCidrs: ['100.64.0.0/10'], statusRefresh: '10m' },
  },
};

describe('the chart passes flags agentcard operator accepts', () => {
  for (const [name, values] of Object.entries(combos)) {
    it(name, async () => {
      const deployment = (await render(values)).one('Deployment') as unknown as Deployment;
      const [command, ...flags] = deployment.spec.template.spec.containers.find(
        (c) => c.name === 'operator',
      )!.args;
      expect(command).toBe('operator');
      const parsed = parseOperatorFlags(flags, { POD_NAMESPACE: 'agentcard-system' });
      expect(parsed).not.toBe('help');
      if (parsed === 'help') return;
      expect(parsed.namespaces).toEqual((values.watchNamespaces as string[] | undefined) ?? []);
      expect(parsed.secretNames).toEqual(
        (values.rbac as { secretNames?: string[] } | undefined)?.secretNames ?? [],
      );
      expect(parsed.probes).toBe((values.probes as { enabled?: boolean } | undefined)?.enabled ?? true);
      const probes = values.probes as { denyCidrs?: string[]; statusRefresh?: string } | undefined;
      if (parsed.probes) {
        expect(parsed.probeDenyCidrs).toEqual(probes?.denyCidrs ?? []);
        const caBundle = (values.probes as { caBundle?: { configMap: string; key: string } } | undefined)
          ?.caBundle;
        // The file the flag names is the key of the ConfigMap the Pod mounts.
        expect(parsed.probeCaFile).toBe(caBundle ? `/etc/agentcard/probe-ca/${caBundle.key}` : undefined);
        const pod = (deployment as unknown as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
        const volume = pod.volumes?.find((v) => v.name === 'probe-ca');
        expect(volume?.configMap?.name).toBe(caBundle?.configMap);
        expect(volume?.configMap?.items?.[0]?.path).toBe(caBundle?.key);
        const mount = pod.containers
          .find((c) => c.name === 'operator')!
          .volumeMounts?.find((m) => m.name === 'probe-ca');
        expect(mount?.mountPath).toBe(caBundle ? '/etc/agentcard/probe-ca' : undefined);
        expect(parsed.probeStatusRefreshMs).toBe(
          probes?.statusRefresh === '10m' ? 600_000 : Number.POSITIVE_INFINITY,
        );
      }
      const sidecar = values.sidecar as { server?: string; trustForwardedHost?: boolean } | undefined;
      if (parsed.webhook.port !== 0) {
        const delay = (values.webhook as { shutdownDelaySeconds?: number } | undefined)?.shutdownDelaySeconds;
        expect(parsed.webhook.shutdownDelayMs).toBe((delay ?? 5) * 1000);
        expect(parsed.webhook.sidecarServer).toBe(sidecar?.server ?? 'nginx');
        expect(parsed.webhook.trustForwardedHost ?? false).toBe(sidecar?.trustForwardedHost ?? false);
        if (parsed.webhook.sidecarServer === 'nginx') {
          expect(parsed.webhook.nginxImage).toMatch(/^nginxinc\/nginx-unprivileged@sha256:[0-9a-f]{64}$/);
        }
      }
      const certManager = values.certManager as { enabled?: boolean; trustDomain?: string } | undefined;
      expect(parsed.issuer).toEqual(
        certManager?.enabled
          ? {
              trustDomain: certManager.trustDomain,
              template: 'spiffe://{trustDomain}/ns/{namespace}/sa/{serviceAccount}',
            }
          : undefined,
      );
      expect(parsed.webhook.port).toBe(
        (values.webhook as { enabled?: boolean } | undefined)?.enabled === false ? 0 : 9443,
      );
    });
  }

  it('a misspelt flag would be caught (the parser is strict)', () => {
    expect(() => parseOperatorFlags(['--leader-elektion'], {})).toThrow(/leader-elektion/);
  });
});
