import { describe, expect, it } from 'vitest';
import { parseAllDocuments, isMap, isSeq } from 'yaml';
import {
  chartDir,
  helm,
  helmWithValues,
  NAMESPACE,
  RELEASE,
  render,
  type K8sObject,
  type Rendered,
} from './chart.ts';

type Container = {
  name: string;
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string }; initialDelaySeconds?: number };
  startupProbe?: { httpGet: { path: string; port: string }; periodSeconds: number; failureThreshold: number };
  readinessProbe: { httpGet: { path: string; port: string } };
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: Record<string, unknown> & { capabilities: { drop: string[] } };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
};
type PodSpec = {
  serviceAccountName: string;
  securityContext: Record<string, unknown> & { seccompProfile: { type: string } };
  topologySpreadConstraints?: {
    topologyKey: string;
    whenUnsatisfiable: string;
    labelSelector: { matchLabels: Record<string, string> };
  }[];
  containers: Container[];
  volumes: { name: string; secret?: { secretName: string }; emptyDir?: object }[];
};
type Deployment = K8sObject & {
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
};
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
type RoleObject = K8sObject & { rules: Rule[] };
type Binding = K8sObject & {
  roleRef: { kind: string; name: string };
  subjects: { kind: string; name: string; namespace: string }[];
};
type Webhook = {
  name: string;
  failurePolicy: string;
  reinvocationPolicy: string;
  sideEffects: string;
  admissionReviewVersions: string[];
  clientConfig: {
    caBundle?: string;
    service: { name: string; namespace: string; path: string; port: number };
  };
  rules: { operations: string[]; resources: string[] }[];
  namespaceSelector: { matchExpressions: { key: string; operator: string; values?: string[] }[] };
  objectSelector?: unknown;
  matchConditions?: { name: string; expression: string }[];
};
type WebhookConfig = K8sObject & { webhooks: Webhook[] };
type Service = K8sObject & {
  spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] };
};

type NestingPolicy = K8sObject & {
  spec: {
    failurePolicy: string;
    matchConstraints: { resourceRules: unknown[] };
    matchConditions: { name: string; expression: string }[];
    validations: { expression: string }[];
  };
};
type NestingBinding = K8sObject & {
  spec: { policyName: string; validationActions: string[]; matchResources?: unknown };
};

const fullname = `${RELEASE}-agentcard-operator`;

function operatorContainer(d: Deployment): Container {
  const c = d.spec.template.spec.containers.find((x) => x.name === 'operator');
  if (!c) throw new Error('no operator container');
  return c;
}

/** The value of `--name=value` in args, or true for a bare `--name`, or undefined. */
function flag(args: string[], name: string): string | true | undefined {
  for (const a of args) {
    if (a === `--${name}`) return true;
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}
function flagAll(args: string[], name: string): string[] {
  return args.filter((a) => a.startsWith(`--${name}=`)).map((a) => a.slice(name.length + 3));
}

function roles(objects: K8sObject[]): RoleObject[] {
  return objects.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole') as RoleObject[];
}

const WRITE_VERBS = [
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
  'escalate',
  'bind',
  'impersonate',
];

describe('helm lint --strict', () => {
  const combos: Record<string, Record<string, unknown>> = {
    defaults: {},
    'namespace-scoped': { watchNamespaces: ['team-a', 'team-b'] },
    'cert-manager with monitoring and network policy': {
      webhook: { certificate: { mode: 'cert-manager' } },
      metrics: {
        serviceMonitor: { enabled: true },
        prometheusRule: { enabled: true },
        dashboard: { enabled: true },
      },
      networkPolicy: { enabled: true },
    },
    'no webhook, no probes, one replica': {
      webhook: { enabled: false },
      probes: { enabled: false },
      replicas: 1,
    },
  };
  for (const [name, values] of Object.entries(combos)) {
    it(`passes: ${name}`, async () => {
      const result = await helmWithValues(['lint', '--strict', chartDir], values);
      expect(result.stderr + result.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(result.code).toBe(0);
    });
  }
});

describe('default values', async () => {
  const r = await render();
  const deploy = r.one('Deployment') as Deployment;
  const pod = deploy.spec.template.spec;
  const c = operatorContainer(deploy);

  it('runs two replicas with leader election on a Lease in the release namespace', () => {
    expect(deploy.metadata.namespace).toBe(NAMESPACE);
    expect(deploy.spec.replicas).toBe(2);
    expect(c.args[0]).toBe('operator');
    expect(flag(c.args, 'leader-elect')).toBe(true);
    expect(flag(c.args, 'leader-election-id')).toBe('agentcard-operator');
    expect(flag(c.args, 'leader-election-namespace')).toBe(NAMESPACE);
    expect(flagAll(c.args, 'namespace')).toEqual([]);
  });

  it('passes POD_NAMESPACE through the downward API', () => {
    const env = c.env.find((e) => e.name === 'POD_NAMESPACE');
    expect(env?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.namespace');
  });

  it('checks /healthz and /readyz on the --metrics-port', () => {
    const metricsPort = c.ports.find((p) => p.name === 'metrics');
    expect(metricsPort?.containerPort).toBe(Number(flag(c.args, 'metrics-port')));
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
  });

  it('gives a slow start minutes before liveness counts (a startup probe, not an initial delay)', () => {
    // On a busy node the operator took over 30 s to listen; the liveness probe alone (3 x 10 s)
    // killed it while starting, over and over.
    expect(c.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(c.startupProbe!.periodSeconds * c.startupProbe!.failureThreshold).toBeGreaterThanOrEqual(300);
    expect(c.livenessProbe.initialDelaySeconds).toBeUndefined();
  });

  it('sets resources', () => {
    expect(c.resources.requests?.cpu).toBeDefined();
    expect(c.resources.requests?.memory).toBeDefined();
    // Above the measured peak at the scale the docs claim (398 MiB at 10,000 cards, probes on).
    expect(c.resources.limits?.memory).toBe('512Mi');
  });

  it('passes the memory limit to the operator through the downward API (heap sizing)', () => {
    const env = c.env.find((e) => e.name === 'AGENTCARD_MEMORY_LIMIT') as
      { valueFrom?: { resourceFieldRef?: Record<string, string> } } | undefined;
    expect(env?.valueFrom?.resourceFieldRef).toEqual({
      containerName: 'operator',
      resource: 'limits.memory',
    });
  });

  it('has a securityContext for the restricted Pod Security Standard and a read-only root', () => {
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBe(65532);
    expect(pod.securityContext.seccompProfile.type).toBe('RuntimeDefault');
    expect(c.securityContext.allowPrivilegeEscalation).toBe(false);
    expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(c.securityContext.capabilities.drop).toEqual(['ALL']);
    // The one writable path is an emptyDir, not the image.
    const tmp = c.volumeMounts.find((m) => m.mountPath === '/tmp');
    expect(pod.volumes.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
  });

  it('spreads replicas across nodes and keeps one through disruptions', () => {
    const spread = pod.topologySpreadConstraints?.[0];
    expect(spread?.topologyKey).toBe('kubernetes.io/hostname');
    expect(spread?.labelSelector.matchLabels).toEqual(deploy.spec.selector.matchLabels);
    const pdb = r.one('PodDisruptionBudget') as K8sObject & {
      spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    };
    expect(pdb.spec.minAvailable).toBe(1);
    expect(pdb.spec.selector.matchLabels).toEqual(deploy.spec.selector.matchLabels);
  });

  it('runs as its own ServiceAccount', () => {
    const sa = r.one('ServiceAccount');
    expect(pod.serviceAccountName).toBe(sa.metadata.name);
    for (const b of [...r.all('ClusterRoleBinding'), ...r.all('RoleBinding')] as Binding[]) {
      expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: NAMESPACE }]);
    }
  });

  it('passes the webhook flags that name the chart objects', () => {
    const svc = r.one('Service', `${fullname}-webhook`) as Service;
    const mwc = r.one('MutatingWebhookConfiguration') as WebhookConfig;
    expect(flag(c.args, 'webhook-port')).toBe('9443');
    expect(flag(c.args, 'webhook-cert-mode')).toBe('self-signed');
    expect(flag(c.args, 'webhook-service')).toBe(svc.metadata.name);
    expect(flag(c.args, 'webhook-config')).toBe(mwc.metadata.name);
    expect(flag(c.args, 'webhook-secret')).toBe(`${fullname}-webhook-tls`);
    expect(flag(c.args, 'sidecar-image')).toBe((c as Container & { image: string }).image);
    expect(flag(c.args, 'sidecar-mode')).toBe('auto');
    // The lean nginx mode is the default, with an image pinned by digest.
    expect(flag(c.args, 'sidecar-server')).toBe('nginx');
    expect(flag(c.args, 'sidecar-nginx-image')).toMatch(/^nginxinc\/nginx-unprivileged@sha256:[0-9a-f]{64}$/);
    expect(flag(c.args, 'trust-forwarded-host')).toBeUndefined();
    expect(svc.spec.ports[0]).toMatchObject({ port: 443, targetPort: 'webhook' });
    expect(svc.spec.selector).toEqual(deploy.spec.selector.matchLabels);
  });

  it('has a webhook that only sees Pod creations outside its own namespace and ignores failures', () => {
    const [hook, ...more] = (r.one('MutatingWebhookConfiguration') as WebhookConfig).webhooks;
    expect(more).toEqual([]);
    expect(hook!.failurePolicy).toBe('Ignore');
    expect(hook!.sideEffects).toBe('None');
    expect(hook!.reinvocationPolicy).toBe('IfNeeded');
    expect(hook!.rules).toEqual([expect.objectContaining({ operations: ['CREATE'], resources: ['pods'] })]);
    // Every namespace is watched by default: only the release namespace is left out.
    expect(hook!.namespaceSelector.matchExpressions).toEqual([
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [NAMESPACE] },
    ]);
    expect(hook!.clientConfig.service).toMatchObject({
      name: `${fullname}-webhook`,
      namespace: NAMESPACE,
      port: 443,
    });
    // The operator keeps the caBundle current; a rendered one would fight it on every sync.
    expect(hook!.clientConfig.caBundle).toBeUndefined();
    expect(hook!.matchConditions?.[0]?.expression).toContain(
      "'agentcard.dev/inject' in object.metadata.annotations",
    );
  });

  it('exposes metrics through a Service', () => {
    const svc = r.one('Service', `${fullname}-metrics`) as Service;
    expect(svc.spec.ports[0]).toMatchObject({ name: 'metrics', targetPort: 'metrics' });
    expect(svc.spec.selector).toEqual(deploy.spec.selector.matchLabels);
  });

  it('renders nothing optional', () => {
    for (const kind of [
      'ServiceMonitor',
      'PrometheusRule',
      'NetworkPolicy',
      'Certificate',
      'Issuer',
      'ConfigMap',
    ]) {
      expect(r.all(kind)).toEqual([]);
    }
  });

  it('renders the five CRDs as templates (their metadata: crd-sync.test.ts)', () => {
    expect(
      r
        .all('CustomResourceDefinition')
        .map((c) => c.metadata.name)
        .sort(),
    ).toEqual(
      [
        'agentcards.agentcard.dev',
        'agentcatalogs.agentcard.dev',
        'clusteragentcatalogs.agentcard.dev',
        'agentpolicies.agentcard.dev',
        'clusteragentpolicies.agentcard.dev',
        'catalogimports.agentcard.dev',
      ].sort(),
    );
  });
});

describe('RBAC', async () => {
  const r = await render();
  const all = roles(r.objects);

  it('never uses a wildcard', () => {
    expect(all.length).toBeGreaterThan(0);
    for (const role of all)
      for (const rule of role.rules) {
        for (const v of [...rule.apiGroups, ...rule.resources, ...rule.verbs]) expect(v).not.toContain('*');
      }
  });

  it('reads Secrets cluster-wide but writes only its own webhook Secret, by name', () => {
    for (const role of all)
      for (const rule of role.rules.filter((x) => x.resources.includes('secrets'))) {
        const writes = rule.verbs.filter((v) => WRITE_VERBS.includes(v));
        if (role.kind === 'ClusterRole') expect(writes).toEqual([]);
        else if (writes.length) {
          expect(role.metadata.namespace).toBe(NAMESPACE);
          // create cannot be limited by name; every other write is.
          if (writes.some((v) => v !== 'create'))
            expect(rule.resourceNames).toEqual([`${fullname}-webhook-tls`]);
        }
      }
  });

  it('writes cluster-wide only AgentCard and catalog status, its ConfigMaps, events, and its own webhook caBundle', () => {
    const writes = new Set<string>();
    for (const role of all.filter(
      (x) => x.kind === 'ClusterRole' && !x.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-edit'],
    )) {
      for (const rule of role.rules) {
        for (const verb of rule.verbs.filter((v) => WRITE_VERBS.includes(v))) {
          for (const res of rule.resources)
            writes.add(`${res}:${verb}${rule.resourceNames ? `@${rule.resourceNames.join(',')}` : ''}`);
        }
      }
    }
    expect([...writes].sort()).toEqual(
      [
        'agentcards/status:patch',
        'agentcatalogs/status:patch',
        'catalogimports/status:patch',
        'clusteragentcatalogs/status:patch',
        'configmaps:create',
        'configmaps:patch',
        'events:create',
        `mutatingwebhookconfigurations:patch@${fullname}`,
      ].sort(),
    );
  });

  it('holds leases only in its own namespace, renewing only its own Lease', () => {
    const leaseRules = all.flatMap((role) =>
      role.rules.filter((x) => x.resources.includes('leases')).map((rule) => ({ role, rule })),
    );
    expect(leaseRules.length).toBeGreaterThan(0);
    for (const { role, rule } of leaseRules) {
      expect(role.kind).toBe('Role');
      expect(role.metadata.namespace).toBe(NAMESPACE);
      if (rule.verbs.some((v) => v !== 'create')) expect(rule.resourceNames).toEqual(['agentcard-operator']);
    }
  });

  it('justifies every rule with a comment', () => {
    let checked = 0;
    for (const doc of parseAllDocuments(r.text)) {
      const kind = doc.get('kind');
      if (kind !== 'Role' && kind !== 'ClusterRole') continue;
      const name = String(doc.getIn(['metadata', 'name']));
      const labels = doc.getIn(['metadata', 'labels']);
      if (isMap(labels) && labels.has('rbac.authorization.k8s.io/aggregate-to-edit')) continue;
      const rules = doc.get('rules', true);
      if (!isSeq(rules)) throw new Error(`${name} has no rules`);
      // The source text between the previous rule (or `rules:`) and this one holds a comment.
      let from = (doc.contents as { items: { key: { range: number[] }; value: unknown }[] }).items.find(
        (pair) => pair.value === rules,
      )!.key.range[1]!;
      for (const item of rules.items as { range: number[] }[]) {
        const between = r.text.slice(from, item.range[0]);
        expect(between, `${name}: rule at offset ${item.range[0]}`).toMatch(/#\s*\S+ \S+/);
        from = item.range[1]!;
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(8);
  });

  it('narrows writes RBAC cannot limit with a ValidatingAdmissionPolicy bound to the ServiceAccount', () => {
    const policy = r.one('ValidatingAdmissionPolicy', `${fullname}-writes`) as K8sObject & {
      spec: { matchConditions: { expression: string }[]; validations: { expression: string }[] };
    };
    expect(policy.spec.matchConditions[0]!.expression).toBe(
      `request.userInfo.username == "system:serviceaccount:${NAMESPACE}:${fullname}"`,
    );
    const rules = policy.spec.validations.map((v) => v.expression).join('\n');
    expect(rules).toContain(`object.metadata.name == "${fullname}-webhook-tls"`);
    expect(rules).toContain('object.metadata.name == "agentcard-operator"');
    expect(rules).toContain('variables.ownedByAgentCard');
    const binding = r.one('ValidatingAdmissionPolicyBinding', `${fullname}-writes`) as K8sObject & {
      spec: { policyName: string; validationActions: string[] };
    };
    expect(binding.spec).toEqual({ policyName: policy.metadata.name, validationActions: ['Deny'] });
  });

  it('refuses over-deep AgentCards at apply time with the nesting policy (failurePolicy Ignore), in every namespace', () => {
    const policy = r.one('ValidatingAdmissionPolicy', `${fullname}-nesting`) as NestingPolicy;
    expect(policy.spec.failurePolicy).toBe('Ignore');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      {
        apiGroups: ['agentcard.dev'],
        apiVersions: ['v1alpha1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['agentcards'],
      },
    ]);
    expect(policy.spec.validations.map((v) => v.expression)).toEqual([
      '!(false in variables.card_capabilities_extensions_params)',
    ]);
    // Updates that leave spec alone (labels, annotations) are not checked.
    expect(policy.spec.matchConditions).toEqual([
      { name: 'spec-changed', expression: "request.operation != 'UPDATE' || object.spec != oldObject.spec" },
    ]);
    const binding = r.one('ValidatingAdmissionPolicyBinding', `${fullname}-nesting`) as NestingBinding;
    expect(binding.spec).toEqual({ policyName: policy.metadata.name, validationActions: ['Deny'] });
  });

  it('lets the built-in view/edit roles see AgentCards', () => {
    const view = r.one('ClusterRole', `${fullname}-view`);
    expect(view.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-view']).toBe('true');
  });
});

describe('namespace-scoped mode (watchNamespaces)', async () => {
  const r = await render({ watchNamespaces: ['team-a', 'team-b'] });
  const c = operatorContainer(r.one('Deployment') as Deployment);

  it('watches only those namespaces', () => {
    expect(flagAll(c.args, 'namespace')).toEqual(['team-a', 'team-b']);
  });

  it('grants the watch rules as Roles in each namespace, not cluster-wide', () => {
    const watchRoles = (r.all('Role') as RoleObject[]).filter((x) =>
      x.rules.some((rule) => rule.resources.includes('agentcards')),
    );
    expect(watchRoles.map((x) => x.metadata.namespace).sort()).toEqual(['team-a', 'team-b']);
    const bindings = (r.all('RoleBinding') as Binding[]).filter((b) => b.roleRef.name === fullname);
    expect(bindings.map((b) => b.metadata.namespace).sort()).toEqual(['team-a', 'team-b']);
    // Only the webhook configuration (cluster-scoped by nature) and the aggregated user roles remain.
    const clusterRules = (r.all('ClusterRole') as RoleObject[])
      .filter((x) => !x.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-edit'])
      .flatMap((x) => x.rules);
    expect(clusterRules.map((x) => x.resources).flat()).toEqual(['mutatingwebhookconfigurations']);
  });

  it('sends the webhook only Pods of the watched namespaces, still never its own', () => {
    const [hook] = (r.one('MutatingWebhookConfiguration') as WebhookConfig).webhooks;
    // The expressions of a selector are ANDed: watched, and not the release namespace.
    expect(hook!.namespaceSelector.matchExpressions).toEqual([
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [NAMESPACE] },
      { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a', 'team-b'] },
    ]);
  });

  it('keeps the extra webhook namespaceSelector expressions alongside the watched namespaces', async () => {
    const extra = { key: 'agentcard.dev/inject', operator: 'NotIn', values: ['disabled'] };
    const both = await render({
      watchNamespaces: ['team-a'],
      webhook: { namespaceSelector: { matchExpressions: [extra] } },
    });
    const [hook] = (both.one('MutatingWebhookConfiguration') as WebhookConfig).webhooks;
    expect(hook!.namespaceSelector.matchExpressions).toEqual([
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [NAMESPACE] },
      { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a'] },
      extra,
    ]);
  });
});

describe('named Secrets mode (rbac.secretNames)', async () => {
  const names = ['agent-signing-key', 'probe-token'];
  const secretRules = (r: Rendered) =>
    roles(r.objects)
      .flatMap((role) => role.rules.map((rule) => ({ role, rule })))
      .filter(({ rule }) => rule.resources.includes('secrets'));

  it('grants get, list and watch on those names only, and passes them to the operator', async () => {
    const r = await render({ rbac: { secretNames: names } });
    const c = operatorContainer(r.one('Deployment') as Deployment);
    expect(flagAll(c.args, 'secret-name')).toEqual(names);
    const reads = secretRules(r).filter(({ rule }) => rule.verbs.includes('list'));
    expect(reads).toHaveLength(1);
    expect(reads[0]!.role.kind).toBe('ClusterRole');
    expect(reads[0]!.rule).toEqual({
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: names,
      verbs: ['get', 'list', 'watch'],
    });
    // No Secret rule anywhere without resourceNames but the webhook's `create` (RBAC cannot limit
    // create by name; the write policy does).
    for (const { rule } of secretRules(r).filter(({ rule }) => !rule.resourceNames))
      expect(rule.verbs).toEqual(['create']);
    // The webhook's own Secret, no longer covered by a read of every Secret, is read by name.
    const own = secretRules(r).find(({ rule }) => rule.resourceNames?.includes(`${fullname}-webhook-tls`));
    expect(own?.rule.verbs).toEqual(['get', 'update']);
  });

  it('combines with watchNamespaces: a Role per namespace with the names', async () => {
    const r = await render({ watchNamespaces: ['team-a', 'team-b'], rbac: { secretNames: names } });
    const reads = secretRules(r).filter(({ rule }) => rule.verbs.includes('list'));
    expect(reads.map(({ role }) => `${role.kind}/${role.metadata.namespace}`).sort()).toEqual([
      'Role/team-a',
      'Role/team-b',
    ]);
    for (const { rule } of reads) expect(rule.resourceNames).toEqual(names);
  });

  it('refuses a name that cannot be a Secret name', async () => {
    const bad = await helmWithValues(['template', RELEASE, chartDir], {
      rbac: { secretNames: ['Bad_Name'] },
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/secretNames/);
  });
});

describe('nesting policy switches', () => {
  it('nestingPolicy.enabled=false renders neither the policy nor its binding', async () => {
    const r = await render({ nestingPolicy: { enabled: false } });
    expect(r.maybe('ValidatingAdmissionPolicy', `${fullname}-nesting`)).toBeUndefined();
    expect(r.maybe('ValidatingAdmissionPolicyBinding', `${fullname}-nesting`)).toBeUndefined();
    expect(r.maybe('ValidatingAdmissionPolicy', `${fullname}-writes`)).toBeDefined();
  });

  it('failurePolicy Fail is passed through; other values are refused by the values schema', async () => {
    const r = await render({ nestingPolicy: { failurePolicy: 'Fail' } });
    expect(
      (r.one('ValidatingAdmissionPolicy', `${fullname}-nesting`) as NestingPolicy).spec.failurePolicy,
    ).toBe('Fail');
    const bad = await helmWithValues(['template', RELEASE, chartDir], {
      nestingPolicy: { failurePolicy: 'Maybe' },
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/nestingPolicy/);
  });

  it('binds only the watched namespaces in namespace-scoped mode, or the namespaceSelector given', async () => {
    const scoped = await render({ watchNamespaces: ['team-a', 'team-b'] });
    expect(
      (scoped.one('ValidatingAdmissionPolicyBinding', `${fullname}-nesting`) as NestingBinding).spec
        .matchResources,
    ).toEqual({
      namespaceSelector: {
        matchExpressions: [
          { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a', 'team-b'] },
        ],
      },
    });
    const selector = { matchLabels: { 'agentcard.dev/checked': 'true' } };
    const chosen = await render({
      watchNamespaces: ['team-a'],
      nestingPolicy: { namespaceSelector: selector },
    });
    expect(
      (chosen.one('ValidatingAdmissionPolicyBinding', `${fullname}-nesting`) as NestingBinding).spec
        .matchResources,
    ).toEqual({
      namespaceSelector: selector,
    });
  });
});

describe('cert-manager mode', async () => {
  const r = await render({ webhook: { certificate: { mode: 'cert-manager' } } });
  const deploy = r.one('Deployment') as Deployment;
  const c = operatorContainer(deploy);
  const cert = r.one('Certificate') as K8sObject & {
    spec: { secretName: string; dnsNames: string[]; issuerRef: { name: string; kind: string } };
  };

  it('creates a Certificate for the webhook Service from a self-signed Issuer', () => {
    expect(cert.spec.dnsNames).toContain(`${fullname}-webhook.${NAMESPACE}.svc`);
    expect(cert.spec.issuerRef).toMatchObject({ name: r.one('Issuer').metadata.name, kind: 'Issuer' });
  });

  it('lets cert-manager inject the caBundle and mounts the certificate', () => {
    const mwc = r.one('MutatingWebhookConfiguration');
    expect(mwc.metadata.annotations?.['cert-manager.io/inject-ca-from']).toBe(
      `${NAMESPACE}/${cert.metadata.name}`,
    );
    expect(flag(c.args, 'webhook-cert-mode')).toBe('cert-manager');
    const dir = flag(c.args, 'webhook-cert-dir');
    const mount = c.volumeMounts.find((m) => m.mountPath === dir);
    expect(mount?.readOnly).toBe(true);
    const volume = deploy.spec.template.spec.volumes.find((v) => v.name === mount?.name);
    expect(volume?.secret?.secretName).toBe(cert.spec.secretName);
  });

  it('drops the rights only self-signed mode needs (caBundle patch, Secret writes)', () => {
    for (const role of roles(r.objects))
      for (const rule of role.rules) {
        expect(rule.resources).not.toContain('mutatingwebhookconfigurations');
        if (rule.resources.includes('secrets'))
          expect(rule.verbs.filter((v) => WRITE_VERBS.includes(v))).toEqual([]);
      }
  });

  it('uses a given issuer instead of creating one', async () => {
    const r2 = await render({
      webhook: {
        certificate: {
          mode: 'cert-manager',
          certManager: { issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer' } },
        },
      },
    });
    expect(r2.all('Issuer')).toEqual([]);
    expect((r2.one('Certificate') as typeof cert).spec.issuerRef).toEqual({
      name: 'corp-ca',
      kind: 'ClusterIssuer',
    });
  });
});

describe('signing certificates from cert-manager (certManager)', () => {
  const certificateRules = (objects: Parameters<typeof roles>[0]) =>
    roles(objects).flatMap((role) => role.rules.filter((rule) => rule.resources.includes('certificates')));

  it('off by default: no flag, no right on certificates', async () => {
    const r = await render();
    expect(certificateRules(r.objects)).toEqual([]);
    expect(flag(operatorContainer(r.one('Deployment') as Deployment).args, 'cert-manager')).toBeUndefined();
  });

  it('on: the flags, and the certificate verbs the issuer controller uses', async () => {
    const r = await render({ certManager: { enabled: true, trustDomain: 'example.org' } });
    const c = operatorContainer(r.one('Deployment') as Deployment);
    expect(flag(c.args, 'cert-manager')).toBe(true);
    expect(flag(c.args, 'trust-domain')).toBe('example.org');
    expect(flag(c.args, 'identity-template')).toBe(
      'spiffe://{trustDomain}/ns/{namespace}/sa/{serviceAccount}',
    );
    const rules = certificateRules(r.objects);
    expect(rules).toHaveLength(1);
    expect(rules[0]).toMatchObject({ apiGroups: ['cert-manager.io'] });
    expect([...rules[0]!.verbs].sort()).toEqual(['create', 'delete', 'get', 'list', 'update', 'watch']);
    // Reading an adopted card's workload (its service account) only comes with adoption.
    const workloadGets = (objects: Parameters<typeof roles>[0]) =>
      roles(objects).flatMap((role) =>
        role.rules.filter((rule) => rule.resources.includes('statefulsets') && rule.verbs.includes('get')),
      );
    expect(workloadGets(r.objects)).toEqual([]);
    const adopting = await render({
      certManager: { enabled: true },
      adoption: { enabled: true, namespaces: ['a'] },
    });
    expect(workloadGets(adopting.objects)).toHaveLength(1);
  });

  it('refuses an identity template without {namespace}', async () => {
    await expect(
      render({ certManager: { enabled: true, identityTemplate: 'spiffe://x/{name}' } }),
    ).rejects.toThrow(/identityTemplate/);
  });
});

describe('policies (policies.enabled)', () => {
  const admissionRules = (objects: Parameters<typeof roles>[0]) =>
    roles(objects).flatMap((role) =>
      role.rules
        .filter((rule) => rule.apiGroups.includes('admissionregistration.k8s.io'))
        .filter((rule) => rule.resources.some((x) => x.startsWith('validatingadmissionpolic')))
        .map((rule) => ({ role, rule })),
    );
  const policyRules = (objects: Parameters<typeof roles>[0]) =>
    roles(objects).flatMap((role) =>
      role.rules
        .filter((rule) => rule.resources.some((x) => x.includes('agentpolicies')))
        .map((rule) => ({ role, rule })),
    );

  it('off by default: no flag, no right on admission policies nor on the policy kinds', async () => {
    const r = await render();
    expect(admissionRules(r.objects)).toEqual([]);
    expect(policyRules(r.objects)).toEqual([]);
    expect(flag(operatorContainer(r.one('Deployment') as Deployment).args, 'policies')).toBeUndefined();
  });

  it('on: the flag, the admission policy writes cluster-wide, the policy kinds read and their status written', async () => {
    const r = await render({ policies: { enabled: true } });
    expect(flag(operatorContainer(r.one('Deployment') as Deployment).args, 'policies')).toBe(true);
    const admission = admissionRules(r.objects);
    expect(admission).toHaveLength(1);
    expect(admission[0]!.role.kind).toBe('ClusterRole');
    expect([...admission[0]!.rule.resources].sort()).toEqual([
      'validatingadmissionpolicies',
      'validatingadmissionpolicybindings',
    ]);
    expect([...admission[0]!.rule.verbs].sort()).toEqual(['create', 'delete', 'list', 'update', 'watch']);
    const kinds = policyRules(r.objects).map(
      ({ rule }) => `${rule.resources.join(',')}:${[...rule.verbs].sort().join(',')}`,
    );
    expect(kinds.sort()).toEqual([
      'agentpolicies/status:patch',
      'agentpolicies:list,watch',
      'clusteragentpolicies/status:patch',
      'clusteragentpolicies:list,watch',
    ]);
    const binding = r.one('ClusterRoleBinding', `${fullname}-policies`) as Binding;
    expect(binding.roleRef).toMatchObject({ kind: 'ClusterRole', name: `${fullname}-policies` });
  });

  it('with watchNamespaces: AgentPolicies in each watched namespace, no ClusterAgentPolicy', async () => {
    const r = await render({ policies: { enabled: true }, watchNamespaces: ['team-a'] });
    const kinds = policyRules(r.objects);
    expect(kinds.map(({ role }) => `${role.kind}/${role.metadata.namespace}`)).toEqual([
      'Role/team-a',
      'Role/team-a',
    ]);
    expect(admissionRules(r.objects).map(({ role }) => role.kind)).toEqual(['ClusterRole']);
  });
});

describe('NetworkPolicies from callers rules (policies.networkPolicies.enabled)', () => {
  const networkRules = (objects: Parameters<typeof roles>[0]) =>
    roles(objects).flatMap((role) =>
      role.rules
        .filter(
          (rule) =>
            rule.resources.includes('networkpolicies') ||
            (rule.verbs.includes('watch') && rule.resources.includes('services')),
        )
        .map((rule) => ({ role, rule })),
    );

  it('off by default, and with policies alone: no flag, no right on NetworkPolicies', async () => {
    for (const values of [{}, { policies: { enabled: true } }]) {
      const r = await render(values);
      expect(networkRules(r.objects)).toEqual([]);
      expect(
        flag(operatorContainer(r.one('Deployment') as Deployment).args, 'network-policies'),
      ).toBeUndefined();
    }
  });

  it("on: the flag, the operator Pods' labels, and NetworkPolicy writes and Service reads where cards are watched", async () => {
    const r = await render({ policies: { enabled: true, networkPolicies: { enabled: true } } });
    const deployment = r.one('Deployment') as Deployment & {
      spec: { template: { metadata: { labels: Record<string, string> } } };
    };
    const args = operatorContainer(deployment).args;
    expect(flag(args, 'network-policies')).toBe(true);
    const labels = Object.fromEntries(
      flagAll(args, 'operator-pod-label').map((l) => l.split('=') as [string, string]),
    );
    expect(Object.keys(labels).length).toBeGreaterThan(0);
    // Each label the flags name is one the operator's Pods carry.
    for (const [k, v] of Object.entries(labels)) expect(deployment.spec.template.metadata.labels[k]).toBe(v);
    const rules = networkRules(r.objects).map(
      ({ role, rule }) => `${role.kind}:${rule.resources.join(',')}:${[...rule.verbs].sort().join(',')}`,
    );
    expect(rules.sort()).toEqual([
      'ClusterRole:networkpolicies:create,delete,list,update,watch',
      'ClusterRole:services:list,watch',
    ]);
    const namespaced = await render({
      policies: { enabled: true, networkPolicies: { enabled: true } },
      watchNamespaces: ['team-a'],
    });
    expect(
      networkRules(namespaced.objects).map(({ role }) => `${role.kind}/${role.metadata.namespace}`),
    ).toEqual(['Role/team-a', 'Role/team-a']);
  });
});

describe('other switches', () => {
  it('webhook off: no webhook objects, rights or port', async () => {
    const r = await render({ webhook: { enabled: false } });
    expect(r.all('MutatingWebhookConfiguration')).toEqual([]);
    expect(r.maybe('Service', `${fullname}-webhook`)).toBeUndefined();
    const c = operatorContainer(r.one('Deployment') as Deployment);
    expect(flag(c.args, 'webhook-port')).toBe('0');
    expect(c.ports.map((p) => p.name)).toEqual(['metrics']);
    for (const role of roles(r.objects))
      for (const rule of role.rules) expect(rule.resources).not.toContain('mutatingwebhookconfigurations');
  });

  it('leader election off: --no-leader-elect and no Lease rights', async () => {
    const r = await render({ leaderElection: { enabled: false }, replicas: 1 });
    const c = operatorContainer(r.one('Deployment') as Deployment);
    expect(flag(c.args, 'no-leader-elect')).toBe(true);
    expect(flag(c.args, 'leader-elect')).toBeUndefined();
    expect(r.all('PodDisruptionBudget')).toEqual([]);
    for (const role of roles(r.objects))
      for (const rule of role.rules) expect(rule.resources).not.toContain('leases');
  });

  it('probes: allow-list CIDRs become flags; off becomes --no-probes', async () => {
    const on = operatorContainer(
      (await render({ probes: { allowCidrs: ['10.0.0.0/8', 'fd00::/8'] } })).one('Deployment') as Deployment,
    );
    expect(flagAll(on.args, 'probe-allow-cidr')).toEqual(['10.0.0.0/8', 'fd00::/8']);
    const off = operatorContainer(
      (await render({ probes: { enabled: false } })).one('Deployment') as Deployment,
    );
    expect(flag(off.args, 'no-probes')).toBe(true);
    expect(flag(off.args, 'probe-allow-cidr')).toBeUndefined();
  });

  it('an image digest wins over the tag, and is the sidecar image too', async () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    const deploy = (await render({ image: { repository: 'registry.example/agentcard', digest } })).one(
      'Deployment',
    ) as Deployment;
    const c = operatorContainer(deploy) as Container & { image: string };
    expect(c.image).toBe(`registry.example/agentcard@${digest}`);
    expect(flag(c.args, 'sidecar-image')).toBe(c.image);
  });

  it('network policy: webhook port open, metrics only from the given peers', async () => {
    const from = [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }];
    const r = await render({ networkPolicy: { enabled: true, metricsFrom: from } });
    const np = r.one('NetworkPolicy') as K8sObject & {
      spec: { policyTypes: string[]; ingress: { ports: { port: string }[]; from?: unknown[] }[] };
    };
    expect(np.spec.policyTypes).toEqual(['Ingress']);
    const byPort = Object.fromEntries(np.spec.ingress.map((rule) => [rule.ports[0]!.port, rule.from]));
    expect(byPort.webhook).toBeUndefined();
    expect(byPort.metrics).toEqual(from);
  });
});

describe('monitoring (opt-in)', async () => {
  const r = await render({
    metrics: {
      serviceMonitor: { enabled: true },
      prometheusRule: { enabled: true },
      dashboard: { enabled: true },
    },
  });

  it('the ServiceMonitor selects the metrics Service port', () => {
    const sm = r.one('ServiceMonitor') as K8sObject & {
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] };
    };
    const svc = r.one('Service', `${fullname}-metrics`) as Service;
    for (const [k, v] of Object.entries(sm.spec.selector.matchLabels))
      expect(svc.metadata.labels?.[k]).toBe(v);
    const other = r.one('Service', `${fullname}-webhook`);
    expect(
      Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => other.metadata.labels?.[k] === v),
    ).toBe(false);
    expect(sm.spec.endpoints[0]!.port).toBe(svc.spec.ports[0]!.name);
  });

  it('the PrometheusRule has the alerts the operations runbook names', () => {
    const rule = r.one('PrometheusRule') as K8sObject & {
      spec: {
        groups: {
          rules: { alert: string; expr: string; for: string; annotations: Record<string, string> }[];
        }[];
      };
    };
    const alerts = Object.fromEntries(rule.spec.groups.flatMap((g) => g.rules).map((x) => [x.alert, x]));
    expect(Object.keys(alerts)).toEqual(
      expect.arrayContaining([
        'AgentCardNotReady',
        'AgentInterfaceUnreachable',
        'SigningKeyMissing',
        'WebhookCertificateExpiring',
        'AgentCardPodsMissingSidecar',
        'AgentCardNotServedAsSigned',
        'AgentCardHeldByPolicy',
        'AgentPolicyViolations',
        'AgentQuarantined',
        'CatalogImportStale',
      ]),
    );
    expect(alerts.AgentQuarantined!.expr).toContain('agentcard_quarantined_agents');
    expect(alerts.CatalogImportStale!.expr).toContain('state="stale"');
    expect(alerts.AgentCardHeldByPolicy!.expr).toContain('reason="PolicyViolation"');
    expect(alerts.AgentPolicyViolations!.expr).toContain('agentcard_policy_violations');
    expect(alerts.AgentCardNotServedAsSigned!.expr).toContain('agentcard_served_card');
    expect(alerts.AgentInterfaceUnreachable!.for).toBe('10m');
    expect(alerts.AgentInterfaceUnreachable!.expr).toContain('agentcard_probe_success');
    expect(alerts.WebhookCertificateExpiring!.expr).toContain(`< ${7 * 86400}`);
    // Prometheus templates survive Helm's own templating.
    expect(alerts.AgentCardNotReady!.annotations.summary).toContain('{{ $labels.namespace }}');
  });

  it('the dashboard ConfigMap holds Grafana JSON with the promised panels', () => {
    const cm = r.one('ConfigMap') as K8sObject & { data: Record<string, string> };
    expect(cm.metadata.labels?.grafana_dashboard).toBe('1');
    const dash = JSON.parse(cm.data['agentcard-operator.json']!) as {
      panels: { title: string; targets: { expr: string }[] }[];
    };
    const byTitle = Object.fromEntries(
      dash.panels.map((p) => [p.title, p.targets.map((t) => t.expr).join(' ')]),
    );
    expect(byTitle['Ready AgentCards']).toContain('agentcard_ready');
    expect(byTitle['Reachability per binding']).toContain('by (binding)');
    expect(byTitle['Probe latency p95 by binding and phase']).toContain(
      'agentcard_probe_duration_seconds_bucket',
    );
    expect(byTitle['Reconciles by result']).toContain('controller_runtime_reconcile_total');
    expect(byTitle['Queue wait p99 by lane']).toContain('by (name, priority, le)');
    expect(byTitle['Policy violations by rule']).toContain('agentcard_policy_violations');
    expect(byTitle['Network enforcement']).toContain('agentcard_quarantined_agents');
    expect(byTitle['Imported entries by CatalogImport']).toContain('agentcard_import_entries');
  });
});

describe('values.schema.json', () => {
  const rejects: [string, Record<string, unknown>, RegExp][] = [
    ['a typo at the top level', { replica: 3 }, /replica/],
    ['a typo in a nested key', { webhook: { failurPolicy: 'Fail' } }, /failurPolicy/],
    ['a wrong type', { replicas: 'two' }, /replicas/],
    ['a value outside the allowed set', { webhook: { failurePolicy: 'Never' } }, /failurePolicy/],
    ['an unknown certificate mode', { webhook: { certificate: { mode: 'vault' } } }, /mode/],
    ['a namespace that is not a DNS label', { watchNamespaces: ['Team_A'] }, /watchNamespaces/],
    ['a bad duration', { operator: { resync: 'ten minutes' } }, /resync/],
    ['an nginx image not pinned by digest', { sidecar: { nginx: { image: 'nginx:latest' } } }, /image/],
    ['an unknown sidecar server', { sidecar: { server: 'caddy' } }, /server/],
  ];
  for (const [what, values, names] of rejects) {
    it(`rejects ${what}`, async () => {
      const result = await helmWithValues(['template', RELEASE, chartDir, '--namespace', NAMESPACE], values);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/schema/);
      expect(result.stderr).toMatch(names);
    });
  }

  it('accepts the documented values file as is', async () => {
    const result = await helm([
      'template',
      RELEASE,
      chartDir,
      '--namespace',
      NAMESPACE,
      '-f',
      `${chartDir}/values.yaml`,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('NOTES.txt', () => {
  it('tells the next command to run', async () => {
    const result = await helm(['install', RELEASE, chartDir, '--namespace', NAMESPACE, '--dry-run=client']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`kubectl -n ${NAMESPACE} rollout status deployment/${fullname}`);
    expect(result.stdout).toContain('kubectl wait --for=condition=Ready');
  });
});
