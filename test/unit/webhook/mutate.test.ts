import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  CARD_VOLUME,
  decide,
  parseReview,
  review,
  useNativeSidecar,
} from '../../../operator/webhook/mutate.ts';
import { AGENT_LABEL, INJECT_ANNOTATION, SIDECAR_CONTAINER } from '../../../operator/api/names.ts';
import type { InjectionConfig, JsonPatchOp } from '../../../operator/webhook/mutate.ts';

const cfg = (over: Partial<InjectionConfig> = {}): InjectionConfig => ({
  sidecarImage: 'ghcr.io/example/agentcard:1.0.0',
  mode: 'native',
  operatorNamespace: 'agentcard-system',
  ...over,
});

function pod(annotations?: Record<string, string>, spec: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name: 'agent-0', namespace: 'team-a', ...(annotations ? { annotations } : {}) },
    spec: { containers: [{ name: 'agent', image: 'agent:1', ports: [{ containerPort: 8080 }] }], ...spec },
  };
}

/** Applies the "add" operations the webhook emits (enough of RFC 6902 for these tests). */
function apply(p: V1Pod, ops: JsonPatchOp[]): V1Pod {
  const out = structuredClone(p) as unknown as Record<string, unknown>;
  for (const op of ops) {
    // RFC 6901 section 4: `~1` is `/` and `~0` is `~` in a reference token.
    const parts = op.path
      .split('/')
      .slice(1)
      .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = parts.pop()!;
    let target = out as Record<string, unknown> | unknown[];
    for (const part of parts) target = (target as Record<string, unknown>)[part] as Record<string, unknown>;
    if (Array.isArray(target)) {
      if (last === '-') target.push(op.value);
      else target.splice(Number(last), 0, op.value);
    } else {
      target[last] = op.value;
    }
  }
  return out as V1Pod;
}

const sidecarsOf = (p: V1Pod) =>
  [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].filter(
    (c) => c.name === SIDECAR_CONTAINER,
  );

describe('decide', () => {
  it('injects a native sidecar as the first init container, with the card volume', () => {
    const p = pod({ [INJECT_ANNOTATION]: 'weather' }, { initContainers: [{ name: 'migrate', image: 'm' }] });
    const d = decide(p, 'team-a', cfg());
    if (!d.inject) throw new Error(d.reason);
    const patched = apply(p, d.patch);
    const sidecar = patched.spec!.initContainers![0]!;
    expect(patched.spec!.initContainers!.map((c) => c.name)).toEqual([SIDECAR_CONTAINER, 'migrate']);
    expect(sidecar.restartPolicy).toBe('Always');
    expect(sidecar.args).toEqual(['sidecar', '--dir', '/etc/agentcard', '--port', '8095']);
    expect(sidecar.ports).toContainEqual({ name: 'agent-card', containerPort: 8095, protocol: 'TCP' });
    expect(sidecar.volumeMounts).toEqual([
      { name: CARD_VOLUME, mountPath: '/etc/agentcard', readOnly: true },
    ]);
    expect(sidecar.env).toContainEqual({
      name: 'NODE_OPTIONS',
      value: '--max-semi-space-size=1 --max-old-space-size=32',
    });
    expect(sidecar.resources?.limits?.memory).toBeDefined();
    expect(patched.spec!.volumes).toEqual([
      { name: CARD_VOLUME, configMap: { name: 'weather-agent-card', optional: true } },
    ]);
    expect(patched.spec!.containers).toHaveLength(1);
  });

  it('passes the restricted Pod Security Standard field by field', () => {
    const d = decide(pod({ [INJECT_ANNOTATION]: 'weather' }), 'team-a', cfg());
    if (!d.inject) throw new Error(d.reason);
    const sc = (d.patch[0]!.value as V1Container[])[0]!.securityContext!;
    expect(sc.runAsNonRoot).toBe(true);
    expect(sc.runAsUser).toBeGreaterThan(0);
    expect(sc.allowPrivilegeEscalation).toBe(false);
    expect(sc.capabilities).toEqual({ drop: ['ALL'] });
    expect(sc.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    expect(sc.readOnlyRootFilesystem).toBe(true);
  });

  it('appends an ordinary container in container mode and to existing volumes', () => {
    const p = pod({ [INJECT_ANNOTATION]: 'weather' }, { volumes: [{ name: 'data', emptyDir: {} }] });
    const d = decide(p, 'team-a', cfg({ mode: 'container' }));
    if (!d.inject) throw new Error(d.reason);
    const patched = apply(p, d.patch);
    expect(patched.spec!.containers!.map((c) => c.name)).toEqual(['agent', SIDECAR_CONTAINER]);
    expect(patched.spec!.containers![1]!.restartPolicy).toBeUndefined();
    expect(patched.spec!.initContainers).toBeUndefined();
    expect(patched.spec!.volumes!.map((v) => v.name)).toEqual(['data', CARD_VOLUME]);
  });

  it('is idempotent: a patched Pod gets no second sidecar, whichever list holds it', () => {
    for (const mode of ['native', 'container'] as const) {
      const p = pod({ [INJECT_ANNOTATION]: 'weather' });
      const first = decide(p, 'team-a', cfg({ mode }));
      if (!first.inject) throw new Error(first.reason);
      const patched = apply(p, first.patch);
      expect(sidecarsOf(patched)).toHaveLength(1);
      const again = decide(patched, 'team-a', cfg({ mode: mode === 'native' ? 'container' : 'native' }));
      expect(again).toMatchObject({ inject: false, reason: 'the sidecar is already there' });
    }
  });

  it('leaves Pods alone that did not ask, are in the operator namespace, or name another namespace', () => {
    expect(decide(pod(), 'team-a', cfg())).toMatchObject({ inject: false, reason: 'no inject annotation' });
    expect(decide(pod({ [INJECT_ANNOTATION]: 'weather' }), 'agentcard-system', cfg()).inject).toBe(false);
    const other = decide(pod({ [INJECT_ANNOTATION]: 'team-b/weather' }), 'team-a', cfg());
    expect(other).toMatchObject({
      inject: false,
      reason: "AgentCard team-b/weather is not in the Pod's namespace team-a",
    });
    const same = decide(pod({ [INJECT_ANNOTATION]: 'team-a/weather' }), 'team-a', cfg());
    expect(same).toMatchObject({ inject: true, card: 'weather' });
    expect(decide(pod({ [INJECT_ANNOTATION]: 'Not_A_Name' }), 'team-a', cfg()).inject).toBe(false);
  });

  it('does not inject into a Pod whose containers already use the sidecar ports', () => {
    const p = pod(
      { [INJECT_ANNOTATION]: 'weather' },
      { containers: [{ name: 'a', ports: [{ containerPort: 8095 }] }] },
    );
    expect(decide(p, 'team-a', cfg())).toMatchObject({
      inject: false,
      reason: 'port 8095 is already used by a container of the Pod',
    });
  });
});

describe('decide, the agent label', () => {
  it('adds the labels map to a Pod that has none', () => {
    const p = pod({ [INJECT_ANNOTATION]: 'weather' });
    const d = decide(p, 'team-a', cfg());
    if (!d.inject) throw new Error(d.reason);
    expect(d.patch).toContainEqual({
      op: 'add',
      path: '/metadata/labels',
      value: { [AGENT_LABEL]: 'weather' },
    });
    expect(apply(p, d.patch).metadata!.labels).toEqual({ [AGENT_LABEL]: 'weather' });
  });

  it('adds one key, escaped, to the labels a Pod has, and replaces a wrong value', () => {
    const cases: Array<Record<string, string>> = [
      { app: 'weather' },
      { app: 'weather', [AGENT_LABEL]: 'other' },
      {},
    ];
    for (const labels of cases) {
      const p = pod({ [INJECT_ANNOTATION]: 'team-a/weather' });
      p.metadata!.labels = labels;
      const d = decide(p, 'team-a', cfg({ mode: 'container' }));
      if (!d.inject) throw new Error(d.reason);
      // RFC 6901: the "/" of the label key is "~1" in the pointer.
      expect(d.patch).toContainEqual({
        op: 'add',
        path: '/metadata/labels/agentcard.dev~1agent-card',
        value: 'weather',
      });
      expect(apply(p, d.patch).metadata!.labels).toEqual({ ...labels, [AGENT_LABEL]: 'weather' });
    }
  });

  it('hashes a name longer than a label value may be', () => {
    const name = `a${'b'.repeat(70)}`;
    const d = decide(pod({ [INJECT_ANNOTATION]: name }), 'team-a', cfg());
    if (!d.inject) throw new Error(d.reason);
    const value = (apply(pod({ [INJECT_ANNOTATION]: name }), d.patch).metadata!.labels ?? {})[AGENT_LABEL]!;
    expect(value).toMatch(/^h\.[0-9a-f]{40}$/);
  });

  it('labels nothing when it injects nothing', () => {
    const d = decide(pod({ [INJECT_ANNOTATION]: 'team-b/weather' }), 'team-a', cfg());
    expect(d.inject).toBe(false);
  });

  it('refuses a review whose Pod labels are not a map', () => {
    const bad = parseReview({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u',
        kind: { kind: 'Pod' },
        object: { metadata: { labels: ['x'] }, spec: { containers: [] } },
      },
    });
    expect(bad).toEqual({ error: 'request.object.metadata.labels is not a map' });
  });
});

describe('useNativeSidecar', () => {
  it('uses native sidecars from Kubernetes 1.29 in auto mode', () => {
    expect(useNativeSidecar('auto', { major: '1', minor: '28' })).toBe(false);
    expect(useNativeSidecar('auto', { major: '1', minor: '29' })).toBe(true);
    expect(useNativeSidecar('auto', { major: '1', minor: '31+' })).toBe(true);
    expect(useNativeSidecar('auto', undefined)).toBe(false);
    expect(useNativeSidecar('native', { major: '1', minor: '20' })).toBe(true);
    expect(useNativeSidecar('container', { major: '1', minor: '33' })).toBe(false);
  });
});

describe('review', () => {
  const request = (object: V1Pod, over: object = {}) => ({
    uid: 'c0ffee',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'CREATE',
    namespace: 'team-a',
    object,
    ...over,
  });

  it('answers with a base64 JSON Patch for an injected Pod', () => {
    const { response } = review(request(pod({ [INJECT_ANNOTATION]: 'weather' })), cfg());
    expect(response.response).toMatchObject({ uid: 'c0ffee', allowed: true, patchType: 'JSONPatch' });
    const ops = JSON.parse(Buffer.from(response.response.patch!, 'base64').toString()) as JsonPatchOp[];
    expect(ops.map((o) => o.path)).toEqual(['/spec/initContainers', '/spec/volumes', '/metadata/labels']);
  });

  it('allows without a patch otherwise, warning when a requested injection is refused', () => {
    const plain = review(request(pod()), cfg()).response.response;
    expect(plain).toEqual({ uid: 'c0ffee', allowed: true });
    const refused = review(request(pod({ [INJECT_ANNOTATION]: 'team-b/weather' })), cfg()).response.response;
    expect(refused.patch).toBeUndefined();
    expect(refused.warnings?.[0]).toContain('not in the Pod');
    const update = review(request(pod({ [INJECT_ANNOTATION]: 'weather' }), { operation: 'UPDATE' }), cfg());
    expect(update.response.response.patch).toBeUndefined();
  });

  it('names what is wrong with a malformed review', () => {
    expect(parseReview(null)).toEqual({ error: 'body is not a JSON object' });
    expect(parseReview({ kind: 'AdmissionReview', apiVersion: 'admission.k8s.io/v1beta1' })).toEqual({
      error: "apiVersion is not 'admission.k8s.io/v1'",
    });
    expect(parseReview({ kind: 'AdmissionReview', apiVersion: 'admission.k8s.io/v1', request: {} })).toEqual({
      error: 'request.uid is missing',
    });
  });
});

describe('decide, nginx server', () => {
  const nginxCfg = cfg({
    server: 'nginx',
    nginxImage: 'nginxinc/nginx-unprivileged@sha256:' + 'f'.repeat(64),
  });

  it('injects nginx with its configuration as an annotation projected by a downwardAPI volume', () => {
    const p = pod({ [INJECT_ANNOTATION]: 'weather' }, { volumes: [{ name: 'data', emptyDir: {} }] });
    const d = decide(p, 'team-a', nginxCfg);
    if (!d.inject) throw new Error(d.reason);
    const patched = apply(p, d.patch);
    const [sidecar] = sidecarsOf(patched);
    expect(sidecar!.image).toBe(nginxCfg.nginxImage);
    expect(sidecar!.command).toEqual(['nginx']);
    expect(sidecar!.args).toEqual([
      '-c',
      '/etc/agentcard-nginx/nginx.conf',
      '-e',
      'stderr',
      '-g',
      'daemon off;',
    ]);
    expect(sidecar!.restartPolicy).toBe('Always');
    expect(sidecar!.ports).toEqual([{ name: 'agent-card', containerPort: 8095, protocol: 'TCP' }]);
    const conf = patched.metadata!.annotations!['agentcard.dev/nginx-conf']!;
    expect(conf).toContain('root /etc/agentcard;');
    expect(conf).toContain('listen 8095;');
    expect(conf).toContain('pid /tmp/nginx.pid;');
    // Stock modules only: no njs, no other load_module, so any nginx image runs it.
    expect(conf).not.toMatch(/load_module|js_import|js_set/);
    // Not trusted unless configured: the header is never read.
    expect(conf).not.toContain('$http_x_forwarded_host');
    expect(conf).toContain('if (-f $document_root/cache-max-age-seconds.place2-digit3)');
    expect(
      Object.keys(patched.metadata!.annotations!).filter((k) => k.startsWith('agentcard.dev/nginx')),
    ).toEqual(['agentcard.dev/nginx-conf']);
    expect(patched.metadata!.annotations![INJECT_ANNOTATION]).toBe('weather');
    const volumes = patched.spec!.volumes!;
    expect(volumes.map((v) => v.name)).toEqual([
      'data',
      CARD_VOLUME,
      'agentcard-nginx-conf',
      'agentcard-nginx-tmp',
    ]);
    expect(volumes[2]!.downwardAPI!.items).toEqual([
      {
        path: 'nginx.conf',
        fieldRef: { fieldPath: "metadata.annotations['agentcard.dev/nginx-conf']" },
      },
    ]);
    expect(sidecar!.volumeMounts!.map((m) => [m.mountPath, m.readOnly ?? false])).toEqual([
      ['/etc/agentcard', true],
      ['/etc/agentcard-nginx', true],
      ['/tmp', false],
    ]);
  });

  it('runs nginx under the restricted Pod Security Standard', () => {
    const d = decide(pod({ [INJECT_ANNOTATION]: 'weather' }), 'team-a', nginxCfg);
    if (!d.inject) throw new Error(d.reason);
    const [sidecar] = sidecarsOf(apply(pod({ [INJECT_ANNOTATION]: 'weather' }), d.patch));
    expect(sidecar!.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 101,
      runAsGroup: 101,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });

  it('passes trust in X-Forwarded-Host to either server', () => {
    const nginx = decide(pod({ [INJECT_ANNOTATION]: 'w' }), 'team-a', {
      ...nginxCfg,
      trustForwardedHost: true,
    });
    if (!nginx.inject) throw new Error(nginx.reason);
    const conf = nginx.patch.find((op) => op.path.startsWith('/metadata/annotations/'))!.value as string;
    expect(conf).toContain('if ($http_x_forwarded_host ~ ');
    const node = decide(pod({ [INJECT_ANNOTATION]: 'w' }), 'team-a', cfg({ trustForwardedHost: true }));
    if (!node.inject) throw new Error(node.reason);
    expect((node.patch[0]!.value as V1Container[])[0]!.args).toContain('--trust-forwarded-host');
  });

  it('refuses a Pod that already has a volume of one of its names', () => {
    const d = decide(
      pod({ [INJECT_ANNOTATION]: 'weather' }, { volumes: [{ name: 'agentcard-nginx-tmp', emptyDir: {} }] }),
      'team-a',
      nginxCfg,
    );
    expect(d).toMatchObject({
      inject: false,
      warn: true,
      reason: expect.stringContaining('agentcard-nginx-tmp'),
    });
  });
});

describe('decide, the sidecar probes', () => {
  const servers = [
    { server: 'node' as const, port: 8096 },
    {
      server: 'nginx' as const,
      port: 8095,
      nginxImage: 'nginxinc/nginx-unprivileged@sha256:' + 'f'.repeat(64),
    },
  ];
  it.each(servers)('$server: a startup probe before the liveness probe, on /healthz; no readiness', (s) => {
    for (const mode of ['native', 'container'] as const) {
      const p = pod({ [INJECT_ANNOTATION]: 'weather' });
      const d = decide(p, 'team-a', cfg({ mode, server: s.server, nginxImage: s.nginxImage }));
      if (!d.inject) throw new Error(d.reason);
      const [sidecar] = sidecarsOf(apply(p, d.patch));
      const healthz = { httpGet: { path: '/healthz', port: s.port } };
      expect(sidecar!.livenessProbe).toEqual({ ...healthz, periodSeconds: 20, failureThreshold: 3 });
      // Probed every second (a native sidecar's startup probe holds the agent's start), and a
      // slow start gets 2 minutes before the liveness probe may kill it.
      expect(sidecar!.startupProbe).toEqual({ ...healthz, periodSeconds: 1, failureThreshold: 120 });
      expect(sidecar!.readinessProbe).toBeUndefined();
    }
  });
});
