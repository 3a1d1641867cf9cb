/**
 * The central card server as a target of the serving conformance suite (serving-conformance.ts):
 * the real `agentcard card-server` command as its own process, reading a ConfigMap published on
 * the real API server, labelled as the controller labels a central card's ConfigMap, whose
 * `serving-hosts` claim DEFAULT_HOST (the suite's Host when it names none). Each server gets a
 * namespace of its own, so the servers of one file never claim each other's hosts.
 *
 * "Nothing published yet" is a card server before its first list: its API server connection goes
 * through a relay that is stalled from the start (relay.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CoreV1Api } from '@kubernetes/client-node';
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SERVING_CENTRAL,
  SERVING_HOSTS_KEY,
  SERVING_LABEL,
} from '../../operator/api/names.ts';
import type { ModeOptions, ServingTarget, TargetServer } from './card-servers.ts';
import { createTestNamespace, kubeConfig, kubeconfigPath } from './cluster.ts';
import { waitFor } from './operator.ts';
import { kubeconfigThrough, startRelay } from './relay.ts';
import { agentcardBin } from './test-package.ts';
import { DEFAULT_HOST } from './serving-conformance.ts';

const CONFIGMAP = 'conformance-agent-card';

export function cardServerTarget(): ServingTarget {
  return {
    name: 'central card server',
    unclaimedHost: 404,
    headerTooLargeStatus: 431,
    start: startCardServerTarget,
  };
}

async function startCardServerTarget(
  files: Record<string, string> | undefined,
  opts: ModeOptions = {},
): Promise<TargetServer> {
  const kc = kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const ns = await createTestNamespace('conformance');
  const tmp = await mkdtemp(join(tmpdir(), 'agentcard-card-server-'));
  const relay = files ? undefined : await startRelay(...apiAddress(kc.getCurrentCluster()!.server));
  relay?.stall();
  const body = (data: Record<string, string>) => ({
    metadata: {
      name: CONFIGMAP,
      namespace: ns.name,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [SERVING_LABEL]: SERVING_CENTRAL },
    },
    data: { ...data, [SERVING_HOSTS_KEY]: `${DEFAULT_HOST}\n` },
  });
  if (files) await core.createNamespacedConfigMap({ namespace: ns.name, body: body(files) });

  const kubeconfig = relay ? kubeconfigThrough(kc, relay, join(tmp, 'kubeconfig')) : kubeconfigPath();
  const child = spawn(
    process.execPath,
    [
      agentcardBin(),
      'card-server',
      '--namespace',
      ns.name,
      '--kubeconfig',
      kubeconfig,
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--address',
      '127.0.0.1',
      ...(opts.trustForwardedHost ? ['--trust-forwarded-host'] : []),
      ...(opts.keepAliveSeconds ? ['--keep-alive', String(opts.keepAliveSeconds)] : []),
    ],
    { env: { ...process.env, KUBECONFIG: '' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('card-server did not start within 30 s')), 30_000);
    createInterface({ input: child.stderr! }).on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      if (entry.msg === 'listening') {
        clearTimeout(timer);
        resolve(entry);
      }
    });
    void exited.then((code) => reject(new Error(`card-server exited with ${code}`)));
  });
  const port = listening.port as number;
  const metricsPort = listening.metricsPort as number;
  // Ready once its ConfigMaps are listed (/readyz): then it answers for the published card.
  if (files) {
    await waitFor('the card server listing its ConfigMaps', async () => {
      const res = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined);
      return res?.status === 200;
    });
  }

  return {
    port,
    pid: child.pid!,
    async publish(next) {
      // Written as the controller writes it: the whole data, replacing the previous version.
      await core.replaceNamespacedConfigMap({ name: CONFIGMAP, namespace: ns.name, body: body(next) });
    },
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(force);
      }
      await relay?.close();
      await ns.cleanup();
      await rm(tmp, { recursive: true, force: true });
    },
  };
}

function apiAddress(server: string): [string, number] {
  const url = new URL(server);
  return [url.hostname, Number(url.port)];
}
