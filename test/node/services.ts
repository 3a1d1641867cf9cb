// Waiting for a Service of the node cluster to route, before a test calls it. A Deployment's
// rollout returns once its Pods are Ready, but a Service only routes to them after two more steps
// that run on their own: the EndpointSlice controller (kube-controller-manager) marks the Pod's
// endpoint ready, and kube-proxy replaces the Service's REJECT rule (what iptables mode installs
// for a Service without ready endpoints: `curl: (7) ... Connection refused`) with rules to the
// endpoint on its next sync. On a busy machine either takes seconds.
import { setTimeout as sleep } from 'node:timers/promises';
import { execInNode, kubectl, type NodeClusterState } from './control.ts';

interface EndpointSliceList {
  items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] }[];
}

/** The addresses of the ready endpoints of the Service `service`, as its EndpointSlices list them. */
export async function readyEndpoints(
  state: NodeClusterState,
  namespace: string,
  service: string,
): Promise<string[]> {
  const out = await kubectl(state, [
    '-n',
    namespace,
    'get',
    'endpointslices',
    '-l',
    `kubernetes.io/service-name=${service}`,
    '-o',
    'json',
  ]);
  return (JSON.parse(out) as EndpointSliceList).items.flatMap((slice) =>
    (slice.endpoints ?? []).filter((e) => e.conditions?.ready === true).flatMap((e) => e.addresses),
  );
}

/**
 * Waits until the Service has a ready endpoint (through the API) and then until its cluster IP
 * accepts a TCP connection on `port` from the node's network namespace (kube-proxy has synced);
 * returns the cluster IP. Any HTTP answer counts: what the answer is, is for the test to check.
 */
export async function waitForService(
  state: NodeClusterState,
  namespace: string,
  service: string,
  port: number,
  timeoutMs = 120_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  const until = async (what: string, done: () => Promise<boolean>) => {
    let last = '';
    for (;;) {
      try {
        if (await done()) return;
      } catch (err) {
        last = (err as Error).message;
      }
      if (Date.now() > deadline)
        throw new Error(
          `${namespace}/${service}: ${what} within ${timeoutMs / 1000} s${last ? `: ${last}` : ''}`,
        );
      await sleep(500);
    }
  };
  await until('no ready endpoint', async () => (await readyEndpoints(state, namespace, service)).length > 0);
  const ip = (
    await kubectl(state, ['-n', namespace, 'get', 'service', service, '-o', 'jsonpath={.spec.clusterIP}'])
  ).trim();
  await until(`the cluster IP ${ip}:${port} refused connections`, async () => {
    // curl exits 0 on any HTTP status; it fails on a refused or timed out connection.
    await execInNode(state, 'curl', ['-sS', '-m', '5', '-o', '/dev/null', `http://${ip}:${port}/`]);
    return true;
  });
  return ip;
}
