// The one-node cluster of test/node/control.ts runs real Pods: the node registers and is Ready,
// a Pod from an image assembled here (Debian's busybox) runs and answers on its Pod IP, through a
// Service (kube-proxy's iptables rules) and by its DNS name (CoreDNS), both from the node's
// network namespace and from another Pod; `kubectl exec` reaches the kubelet.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execInNode, kubectl, DNS_IP, NODE_NAME } from '../node/control.ts';
import { BUSYBOX } from '../node/images.ts';
import { waitForService } from '../node/services.ts';

const state = inject('nodeCluster');
const ns = `node-e2e-${process.pid}`;
const k = (...args: string[]) => kubectl(state, args);

const workload = `
apiVersion: v1
kind: ConfigMap
metadata: { name: www, namespace: ${ns} }
data: { index.html: "hello from a real Pod\\n" }
---
apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: ${ns} }
spec:
  replicas: 1
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers:
        - name: httpd
          image: agentcard.test/busybox:1
          imagePullPolicy: Never
          command: [httpd, -f, -p, '8080', -h, /www]
          ports: [{ containerPort: 8080 }]
          readinessProbe: { httpGet: { path: /index.html, port: 8080 } }
          volumeMounts: [{ name: www, mountPath: /www }]
      volumes: [{ name: www, configMap: { name: www } }]
---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: ${ns} }
spec:
  selector: { app: web }
  ports: [{ port: 80, targetPort: 8080 }]
---
apiVersion: v1
kind: Pod
metadata: { name: client, namespace: ${ns} }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: client
      image: agentcard.test/busybox:1
      imagePullPolicy: Never
      command: [sleep, '3600']
`;

describe('a real node', () => {
  beforeAll(async () => {
    await k('create', 'namespace', ns);
    await kubectl(state, ['apply', '-f', '-'], workload);
    await k('-n', ns, 'rollout', 'status', 'deployment/web', '--timeout=180s');
    await k('-n', ns, 'wait', 'pod/client', '--for=condition=Ready', '--timeout=180s');
    // A rollout ends when the Pod is Ready; the Service routes to it only once its EndpointSlice
    // says so and kube-proxy has synced (services.ts): seconds later on a busy machine.
    await waitForService(state, ns, 'web', 80);
  });

  afterAll(async () => {
    await k('delete', 'namespace', ns, '--wait=false').catch(() => undefined);
  });

  it('registers with the control plane and is Ready, running containerd', async () => {
    const node = JSON.parse(await k('get', 'node', NODE_NAME, '-o', 'json')) as {
      status: { conditions: { type: string; status: string }[]; nodeInfo: Record<string, string> };
    };
    expect(node.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(node.status.nodeInfo.kubeletVersion).toBe('v1.36.3');
    expect(node.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/2\./);
  });

  it('serves on the Pod IP, through the Service and by DNS from the node network namespace', async () => {
    const podIP = (
      await k('-n', ns, 'get', 'pods', '-l', 'app=web', '-o', 'jsonpath={.items[0].status.podIP}')
    ).trim();
    expect(podIP).toMatch(/^10\.244\.0\.\d+$/);
    const get = (url: string) => execInNode(state, 'curl', ['-sS', '-m', '5', url]);
    expect(await get(`http://${podIP}:8080/index.html`)).toBe('hello from a real Pod\n');

    const clusterIP = (await k('-n', ns, 'get', 'service', 'web', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    expect(clusterIP).toMatch(/^10\.0\.0\.\d+$/);
    expect(await get(`http://${clusterIP}/index.html`)).toBe('hello from a real Pod\n');

    const lookup = await execInNode(state, BUSYBOX, ['nslookup', `web.${ns}.svc.cluster.local`, DNS_IP]);
    expect(lookup).toContain(clusterIP);
  });

  it('reaches the Service by its DNS name from another Pod (kubectl exec through the kubelet)', async () => {
    // busybox's nc, not its wget: Debian's busybox-static wget crashes (SIGSEGV) on this kernel.
    const request = 'printf "GET /index.html HTTP/1.0\\r\\nHost: web\\r\\n\\r\\n" | nc -w 5 web 80';
    const response = await k('-n', ns, 'exec', 'client', '--', 'sh', '-c', request);
    expect(response).toMatch(/^HTTP\/1\.[01] 200 /);
    expect(response.endsWith('\r\n\r\nhello from a real Pod\n')).toBe(true);
  });
});
