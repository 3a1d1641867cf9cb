/**
 * Admission webhook latency: what our Pod webhook adds to every Pod creation, against a no-op
 * webhook on the same TLS stack, under the same load, through the real kube-apiserver.
 *
 * - ours: `startWebhook` (operator/webhook/server.ts) as the operator runs it, self-signed mode,
 *   in its own process;
 * - no-op: a node:https server in its own process with the same certificate and TLS options that
 *   answers every review `allowed` without a patch (the least a webhook can do).
 *
 * One MutatingWebhookConfiguration (failurePolicy Ignore, timeout 5 s, this benchmark's namespace
 * only) points at one of them at a time. Rounds alternate ours / no-op (ABBA order), each creating
 * annotated Pods open-loop at RATE per second for ROUND_S seconds (Pods are never scheduled: the
 * control plane has no nodes). Latency is the client's Pod-create round trip, so the webhook's
 * share is the difference between the two; the API server's own webhook histogram
 * (apiserver_admission_webhook_admission_duration_seconds) is shown next to it, at its coarse
 * bucket bounds. Writes the `## Admission webhook latency` section of docs/BENCHMARKS.md.
 *
 *   node bench/webhook.bench.ts [--rate 50] [--round-seconds 10] [--rounds 4]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { table, writeSection } from './report.ts';
import { apiServerMetrics } from './api-writes.ts';

type ChildMessage = { port: number };
const self = fileURLToPath(import.meta.url);
const log = (line: string) => process.stderr.write(`[webhook] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const WEBHOOK_NAME = 'pods.agentcard.dev';
const MUTATE_PATH = '/mutate-pods';

/** Child: our webhook, exactly as the operator starts it. */
async function serveOurs(): Promise<void> {
  const [, , , kubeconfig, namespace, configName] = process.argv;
  const { Registry } = await import('prom-client');
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { KubeClient } = await import('../operator/kube/client.ts');
  const { createLogger } = await import('../operator/log.ts');
  const { startWebhook } = await import('../operator/webhook/server.ts');
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig!);
  const client = new KubeClient(kc);
  const webhook = await startWebhook({
    client,
    port: 0,
    host: '127.0.0.1',
    certMode: 'self-signed',
    secretName: 'bench-webhook-tls',
    serviceName: 'bench-webhook',
    webhookConfigName: configName!,
    operatorNamespace: namespace!,
    sidecarImage: 'registry.example/agentcard:bench',
    sidecarMode: 'auto',
    // The operator's logger at its default level (info: injections are logged at debug), to /dev/null.
    logger: createLogger({ bench: 'webhook' }, { write: (line) => process.stdout.write(line) }),
    registry: new Registry(),
    extraHosts: ['127.0.0.1'],
  });
  process.send!({ port: webhook.port } satisfies ChildMessage);
  process.on('disconnect', () => void webhook.close().then(() => process.exit(0)));
}

/** Child: a no-op webhook on the same TLS stack (node:https, same certificate and options). */
async function serveNoop(): Promise<void> {
  const { cert, key } = JSON.parse(process.argv[3]!) as { cert: string; key: string };
  const server = createServer(
    { cert, key, minVersion: 'TLSv1.2', requestTimeout: 15_000, headersTimeout: 10_000 },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const uid = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request: { uid: string } })
          .request.uid;
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid, allowed: true },
          }),
        );
      });
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.send!({ port: (server.address() as AddressInfo).port } satisfies ChildMessage);
  process.on('disconnect', () => process.exit(0));
}

function startChild(args: string[]): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = fork(self, args, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    child.once('message', (m) => resolve({ child, port: (m as ChildMessage).port }));
    child.once('exit', (code) => reject(new Error(`webhook child exited with ${code}`)));
  });
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;

/** The API server's admission histogram for our webhook name: cumulative counts by bucket. */
function admissionBuckets(metrics: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_admission_webhook_admission_duration_seconds_bucket{')) continue;
    if (!line.includes(`name="${WEBHOOK_NAME}"`) || !line.includes('type="admit"')) continue;
    const le = /le="([^"]+)"/.exec(line)?.[1];
    if (!le) continue;
    out.set(le, (out.get(le) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** The smallest bucket bound below which at least `q` of the observations between two scrapes fall. */
function bucketQuantile(before: Map<string, number>, after: Map<string, number>, q: number): string {
  const bounds = [...after.keys()].sort((a, b) => Number(a) - Number(b));
  const total = (after.get('+Inf') ?? 0) - (before.get('+Inf') ?? 0);
  if (total <= 0) return 'n/a';
  for (const le of bounds) {
    if ((after.get(le) ?? 0) - (before.get(le) ?? 0) >= q * total)
      return le === '+Inf' ? '> 25 s' : `<= ${Number(le) * 1000} ms`;
  }
  return 'n/a';
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rate: { type: 'string', default: '50' },
      'round-seconds': { type: 'string', default: '10' },
      rounds: { type: 'string', default: '4' },
    },
  });
  const RATE = Number(values.rate);
  const ROUND_S = Number(values['round-seconds']);
  const ROUNDS = Number(values.rounds);

  const { up, down } = await import('../test/controlplane/control.ts');
  const { kubeconfigFile } = await import('../test/controlplane/paths.ts');
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { KubeClient } = await import('../operator/kube/client.ts');
  const { SECRET_KEYS } = await import('../operator/webhook/certs.ts');
  const { INJECT_ANNOTATION, SIDECAR_CONTAINER } = await import('../operator/api/names.ts');

  const { started } = await up(log);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigFile);
  const client = new KubeClient(kc);
  const suffix = randomBytes(3).toString('hex');
  const opsNs = `bench-webhook-ops-${suffix}`;
  const appNs = `bench-webhook-app-${suffix}`;
  const configName = `bench-webhook-${suffix}`;
  const children: ChildProcess[] = [];
  const guard = setTimeout(
    () => {
      log('hard time limit reached');
      children.forEach((c) => c.kill('SIGKILL'));
      process.exit(1);
    },
    (ROUNDS * ROUND_S + 300) * 1000,
  );
  try {
    for (const name of [opsNs, appNs])
      await client.request('POST', '/api/v1/namespaces', { body: { metadata: { name } } });
    for (;;) {
      // Pods need the namespace's default ServiceAccount (the ServiceAccount admission plugin).
      const sa = await client
        .request('GET', `/api/v1/namespaces/${appNs}/serviceaccounts/default`)
        .catch(() => undefined);
      if (sa) break;
      await sleep(200);
    }
    const hook = (port: number) => ({
      name: WEBHOOK_NAME,
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Ignore',
      reinvocationPolicy: 'Never',
      timeoutSeconds: 5,
      clientConfig: { url: `https://127.0.0.1:${port}${MUTATE_PATH}` },
      namespaceSelector: {
        matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [appNs] }],
      },
      rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
    });
    const configPath = '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations';
    await client.request('POST', configPath, {
      body: { metadata: { name: configName }, webhooks: [hook(1)] },
    });

    const ours = await startChild(['--serve-ours', kubeconfigFile, opsNs, configName]);
    children.push(ours.child);
    // Our webhook created its CA and serving certificate in a Secret and patched the caBundle.
    let secret: { data?: Record<string, string> } | undefined;
    while (!secret?.data?.[SECRET_KEYS.key]) {
      secret = await client
        .request<{ data?: Record<string, string> }>(
          'GET',
          `/api/v1/namespaces/${opsNs}/secrets/bench-webhook-tls`,
        )
        .catch(() => undefined);
      if (!secret?.data?.[SECRET_KEYS.key]) await sleep(200);
    }
    const pem = (k: string) => Buffer.from(secret!.data![k]!, 'base64').toString('utf8');
    const noop = await startChild([
      '--serve-noop',
      JSON.stringify({ cert: pem(SECRET_KEYS.cert), key: pem(SECRET_KEYS.key) }),
    ]);
    children.push(noop.child);

    let podCounter = 0;
    const podBody = () => ({
      metadata: { name: `p-${podCounter++}`, annotations: { [INJECT_ANNOTATION]: 'weather' } },
      spec: {
        automountServiceAccountToken: false,
        containers: [{ name: 'agent', image: 'registry.example/agent:1' }],
      },
    });
    type Pod = { spec?: { containers?: { name: string }[]; initContainers?: { name: string }[] } };
    const createPod = () =>
      client.request<Pod>('POST', `/api/v1/namespaces/${appNs}/pods`, { body: podBody() });
    const injected = (pod: Pod) =>
      [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].some(
        (c) => c.name === SIDECAR_CONTAINER,
      );

    /** Points the configuration at `port` and waits until the API server calls that server. */
    const pointAt = async (target: 'ours' | 'noop') => {
      const port = target === 'ours' ? ours.port : noop.port;
      const current = await client.request<{ metadata: { resourceVersion: string }; webhooks: unknown[] }>(
        'GET',
        `${configPath}/${configName}`,
      );
      const caBundle = (current.webhooks[0] as { clientConfig: { caBundle?: string } }).clientConfig.caBundle;
      await client.request('PUT', `${configPath}/${configName}`, {
        body: {
          metadata: { name: configName, resourceVersion: current.metadata.resourceVersion },
          webhooks: [{ ...hook(port), clientConfig: { ...hook(port).clientConfig, caBundle } }],
        },
      });
      for (let i = 0; ; i++) {
        if (injected(await createPod()) === (target === 'ours')) break;
        if (i > 200) throw new Error(`the API server never called the ${target} webhook`);
        await sleep(100);
      }
    };

    const metrics = () => apiServerMetrics(kc);
    const results: Record<'ours' | 'noop', { latencies: number[]; errors: number }> = {
      ours: { latencies: [], errors: 0 },
      noop: { latencies: [], errors: 0 },
    };
    const order: Array<'ours' | 'noop'> = [];
    const ab: Array<'ours' | 'noop'> = ['ours', 'noop'];
    for (let r = 0; r < ROUNDS; r++) order.push(...(r % 2 === 0 ? ab : [...ab].reverse()));
    const apiBefore = new Map<string, Map<string, number>>();
    const apiAfter = new Map<string, Map<string, number>>();
    for (const [i, target] of order.entries()) {
      await pointAt(target);
      // Warm-up: a second of the same load, not counted.
      const before = admissionBuckets(await metrics());
      const round: Promise<void>[] = [];
      const total = (ROUND_S + 1) * RATE;
      const t0 = performance.now();
      for (let n = 0; n < total; n++) {
        const due = t0 + (n * 1000) / RATE;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const counted = n >= RATE;
        const start = performance.now();
        round.push(
          createPod().then(
            (pod) => {
              if (!counted) return;
              if (injected(pod) !== (target === 'ours')) results[target].errors++;
              results[target].latencies.push(performance.now() - start);
            },
            () => void (counted && results[target].errors++),
          ),
        );
      }
      await Promise.all(round);
      const after = admissionBuckets(await metrics());
      const acc = (m: Map<string, Map<string, number>>, key: string, v: Map<string, number>) => {
        const cur = m.get(key) ?? new Map<string, number>();
        for (const [le, n] of v) cur.set(le, (cur.get(le) ?? 0) + n);
        m.set(key, cur);
      };
      acc(apiBefore, target, before);
      acc(apiAfter, target, after);
      const sorted = [...results[target].latencies].sort((a, b) => a - b);
      log(
        `round ${i + 1}/${order.length} ${target}: ${sorted.length} Pods so far, ` +
          `p50 ${quantile(sorted, 0.5).toFixed(1)} ms, p99 ${quantile(sorted, 0.99).toFixed(1)} ms`,
      );
    }

    const summary = (target: 'ours' | 'noop') => {
      const sorted = [...results[target].latencies].sort((a, b) => a - b);
      return {
        n: sorted.length,
        p50: quantile(sorted, 0.5),
        p99: quantile(sorted, 0.99),
        errors: results[target].errors,
        apiP50: bucketQuantile(apiBefore.get(target)!, apiAfter.get(target)!, 0.5),
        apiP99: bucketQuantile(apiBefore.get(target)!, apiAfter.get(target)!, 0.99),
      };
    };
    const o = summary('ours');
    const z = summary('noop');
    const p99Ratio = o.p99 / z.p99;
    writeSection(
      'webhook-latency',
      'Admission webhook latency',
      [
        `\`node bench/webhook.bench.ts --rate ${RATE} --round-seconds ${ROUND_S} --rounds ${ROUNDS}\`: Pods created ` +
          `open-loop at ${RATE} per second through the local kube-apiserver, ${order.length} rounds of ${ROUND_S} s ` +
          '(plus 1 s of uncounted warm-up each), alternating our webhook and a no-op webhook (same node:https TLS ' +
          'stack and certificate, answers `allowed` without a patch), each in its own process. Latency is the ' +
          "client's Pod-create round trip (API server, admission chain, etcd); the webhook's own share is the " +
          "difference. The API server's `apiserver_admission_webhook_admission_duration_seconds` only has coarse " +
          'buckets (5, 25, 100, 500 ms, ...), shown as bounds.',
        '',
        table(
          ['webhook', 'Pods', 'p50', 'p99', 'API server: webhook p50 / p99', 'errors'],
          [
            [
              'ours (injects the sidecar)',
              o.n,
              `${o.p50.toFixed(1)} ms`,
              `${o.p99.toFixed(1)} ms`,
              `${o.apiP50} / ${o.apiP99}`,
              o.errors,
            ],
            [
              'no-op',
              z.n,
              `${z.p50.toFixed(1)} ms`,
              `${z.p99.toFixed(1)} ms`,
              `${z.apiP50} / ${z.apiP99}`,
              z.errors,
            ],
          ],
        ),
        '',
        `p99 ours / no-op: **${p99Ratio.toFixed(2)}x** (goal <= 1.5x: ${p99Ratio <= 1.5 ? 'met' : '**not met**'}); ` +
          `p50 ${(o.p50 / z.p50).toFixed(2)}x.`,
      ].join('\n'),
    );
    log('results written to docs/BENCHMARKS.md');
  } finally {
    clearTimeout(guard);
    children.forEach((c) => c.connected && c.disconnect());
    await client
      .request('DELETE', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${configName}`)
      .catch(() => {});
    for (const name of [opsNs, appNs])
      await client.request('DELETE', `/api/v1/namespaces/${name}`).catch(() => {});
    if (started) await down(log);
  }
}

if (process.argv[2] === '--serve-ours') await serveOurs();
else if (process.argv[2] === '--serve-noop') await serveNoop();
else await main();
