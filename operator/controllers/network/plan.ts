/**
 * The pure part of the network controller (controller.ts): for one AgentCard, the
 * networking.k8s.io/v1 NetworkPolicy its Enforce policies' callers rules (and quarantine) ask
 * for, or none. No I/O: the controller passes what its caches hold.
 *
 * Decisions (docs/policy.md, "Network enforcement"):
 * - **Which policies act**: only valid policies in `Enforce` mode that select the card. `Audit`
 *   and `Warn` policies generate nothing on the network; a callers rule is reported there only.
 * - **Which Pods**: the agent's Pods, by AGENT_LABEL (the webhook sets it at injection; a Pod that
 *   serves its own card is labelled by its owner). Ingress only: the agent's own calls out are
 *   not this policy's business.
 * - **The card's ports** (the sidecar's card port, 8095, and its metrics and health port, 8096)
 *   are open to everyone: discovery is public (A2A 1.0 section 8.2, the well-known URI), and
 *   Prometheus and the kubelet reach the second.
 * - **The A2A ports**: each interface URL of every audience's card whose host names a Service of
 *   the card's namespace (`svc`, `svc.ns`, `svc.ns.svc`, `svc.ns.svc.cluster.local`), mapped
 *   through that Service's port to its targetPort (a named targetPort stays a name: NetworkPolicy
 *   resolves it on each Pod); a headless Service's port is the Pod's. Interfaces on other hosts (a
 *   gateway, an Ingress) are reached through it: its Pods are the callers the network sees, and
 *   the Service port behind it is the one resolved. These ports admit only the allowed callers
 *   and the operator (its probes).
 * - **Every other port** stays open to everyone, written as port ranges (`port`/`endPort`) around
 *   the A2A ports, when they are all numbers. When an A2A port is a name (NetworkPolicy cannot say
 *   "every port but the one named x"), an interface names a Service of the namespace whose port
 *   is not found, or no interface resolves to a port at all, the rule fails closed: every port
 *   but the card's admits only the callers and the operator. An implementation that ignores
 *   endPort reads each range as its first port: stricter, never looser.
 * - **Strictest wins**: with several callers rules (of one or several Enforce policies), a caller
 *   must be allowed by every one of them (the intersection). Callers are resolved now, from the
 *   cached AgentCards (and the cards a rule names, cached or not): by name, by namespace
 *   selector, by verified signer identity. Each allowed caller is its namespace plus the Pods
 *   labelled with its name.
 * - **Quarantine** (`spec.quarantine: true`, Enforce only): a card that fails a trust rule of such
 *   a policy (Fail, not "not evaluated": a fact not known yet quarantines nothing) gets a policy
 *   that admits nothing but the card's ports and the operator, whatever the callers rules say.
 * - **Ownership**: the AgentCard is the NetworkPolicy's controller owner, so the garbage
 *   collector deletes it with the card; the labels select it for the cache; annotations name the
 *   card and the policies it comes from. Deleting a policy plans again without it.
 */
import {
  AGENT_LABEL,
  agentLabelValue,
  API_VERSION,
  GROUP,
  KIND,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  NETWORK_POLICY_LABEL,
} from '../../api/names.ts';
import { createHash } from 'node:crypto';
import {
  evaluatePolicy,
  isAllowedCaller,
  selects,
  type Caller,
  type Subject,
} from '../../policy/evaluate.ts';
import { policyRef, ruleKind, type CallersRule, type Policy } from '../../policy/resource.ts';
import { SIDECAR_METRICS_PORT, SIDECAR_PORT } from '../../webhook/mutate.ts';

/** Annotation of a generated NetworkPolicy: the AgentCard it is for (`namespace/name`). */
export const AGENT_CARD_REF_ANNOTATION = `${GROUP}/agent-card-ref`;
/** Annotation of a generated NetworkPolicy: the policies it comes from, comma-separated. */
export const POLICIES_ANNOTATION = `${GROUP}/policies`;

/** The ports serving the card, open to everyone: the sidecar's card port and its metrics port. */
export const CARD_PORTS: readonly NetworkPort[] = [
  { protocol: 'TCP', port: SIDECAR_PORT },
  { protocol: 'TCP', port: SIDECAR_METRICS_PORT },
];

const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';
const MAX_PORT = 65535;

// ---- inputs -----------------------------------------------------------------------------------

/** A Service of the card's namespace, as far as port resolution goes. */
export interface ServiceView {
  name: string;
  /** A selector Service routes to Pods; one without a selector routes elsewhere. */
  hasSelector: boolean;
  /** clusterIP None: clients connect to the Pods' own ports. */
  headless: boolean;
  ports: Array<{ port: number; targetPort?: number | string; protocol?: string }>;
}

/** The operator's Pods: admitted on every port of every agent, so its probes stay green. */
export interface OperatorPods {
  namespace: string;
  /** Labels of the operator's Pods (empty: every Pod of its namespace). */
  labels: Readonly<Record<string, string>>;
}

/** One valid policy, with the key that names it in the annotation. */
export interface KeyedPolicy {
  key: string;
  policy: Policy;
}

export interface AgentInput {
  /** What the engine knows of the card: name, namespace, labels, facts, rendered cards. */
  subject: Subject;
  uid: string;
  /** The valid policies in scope (the plan keeps those that select the card, in Enforce mode). */
  policies: readonly KeyedPolicy[];
  /** Services of the card's namespace. */
  services: readonly ServiceView[];
  /** Every known agent that could call (the cached AgentCards). */
  callers: readonly Caller[];
  operator: OperatorPods;
}

// ---- ports ------------------------------------------------------------------------------------

export interface NetworkPort {
  protocol: 'TCP' | 'UDP' | 'SCTP';
  port?: number | string;
  endPort?: number;
}

export interface PortResolution {
  /** The A2A ports found (deduplicated, sorted). */
  ports: NetworkPort[];
  /** Interfaces whose port was not found, with why (an outside host is not one of them). */
  unresolved: string[];
}

const DEFAULT_PORTS: Record<string, number> = {
  http: 80,
  https: 443,
  ws: 80,
  wss: 443,
  grpc: 80,
  grpcs: 443,
};

/** The Service a host names, when it is a name of a Service of `namespace`. */
export function serviceOfHost(host: string, namespace: string): string | undefined {
  const labels = host.toLowerCase().replace(/\.$/, '').split('.');
  const [svc, ...rest] = labels;
  if (!svc || /^\d+$/.test(svc)) return undefined;
  const tail = rest.join('.');
  const ok =
    tail === '' ||
    tail === namespace ||
    tail === `${namespace}.svc` ||
    tail === `${namespace}.svc.cluster.local`;
  return ok ? svc : undefined;
}

const protocolOf = (p: string | undefined): NetworkPort['protocol'] =>
  p === 'UDP' || p === 'SCTP' ? p : 'TCP';

/**
 * The A2A ports of the agent's Pods: each interface URL whose host is a Service of the card's
 * namespace, through that Service's port. URLs on other hosts are left out (reached through
 * something else); a Service name whose Service or port is not found is reported.
 */
export function resolveA2aPorts(
  urls: readonly string[],
  namespace: string,
  services: readonly ServiceView[],
): PortResolution {
  const ports = new Map<string, NetworkPort>();
  const unresolved: string[] = [];
  for (const url of new Set(urls)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      unresolved.push(`${url}: not an absolute URL`);
      continue;
    }
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    const svcName = serviceOfHost(host, namespace);
    if (!svcName) continue;
    const scheme = parsed.protocol.replace(/:$/, '').toLowerCase();
    const port = parsed.port ? Number(parsed.port) : DEFAULT_PORTS[scheme];
    if (port === undefined) {
      unresolved.push(`${url}: no port, and scheme ${scheme} has no default port`);
      continue;
    }
    const service = services.find((s) => s.name === svcName);
    if (!service) {
      unresolved.push(`${url}: Service ${namespace}/${svcName} not found`);
      continue;
    }
    if (!service.hasSelector) {
      unresolved.push(`${url}: Service ${namespace}/${svcName} has no selector`);
      continue;
    }
    const servicePort = service.ports.find((p) => p.port === port);
    if (!servicePort) {
      unresolved.push(`${url}: Service ${namespace}/${svcName} has no port ${port}`);
      continue;
    }
    const target = service.headless ? port : (servicePort.targetPort ?? port);
    const resolved: NetworkPort = {
      protocol: protocolOf(servicePort.protocol),
      port: typeof target === 'string' && /^\d+$/.test(target) ? Number(target) : target,
    };
    ports.set(`${resolved.protocol}/${resolved.port}`, resolved);
  }
  return { ports: [...ports.values()].sort(comparePorts), unresolved };
}

function comparePorts(a: NetworkPort, b: NetworkPort): number {
  if (a.protocol !== b.protocol) return a.protocol < b.protocol ? -1 : 1;
  const x = a.port ?? 0;
  const y = b.port ?? 0;
  if (typeof x === typeof y) return x < y ? -1 : x > y ? 1 : 0;
  return typeof x === 'number' ? -1 : 1;
}

/** Every port of `protocol` from 1 to 65535 but `excluded`, as ranges (`port`, `endPort`). */
export function portRangesExcept(
  protocol: NetworkPort['protocol'],
  excluded: readonly number[],
): NetworkPort[] {
  const out: NetworkPort[] = [];
  let from = 1;
  for (const p of [...new Set(excluded)].sort((a, b) => a - b)) {
    if (p > from) out.push(range(protocol, from, p - 1));
    from = Math.max(from, p + 1);
  }
  if (from <= MAX_PORT) out.push(range(protocol, from, MAX_PORT));
  return out;
}

const range = (protocol: NetworkPort['protocol'], from: number, to: number): NetworkPort =>
  from === to ? { protocol, port: from } : { protocol, port: from, endPort: to };

// ---- callers ----------------------------------------------------------------------------------

/**
 * The callers every rule allows (the intersection: strictest wins), from the known agents and the
 * agents the rules name by AgentCard (allowed by name even before the operator sees them).
 */
export function allowedCallers(
  rules: readonly CallersRule[],
  known: readonly Caller[],
  targetNamespace: string,
): Caller[] {
  const candidates = new Map<string, Caller>();
  for (const c of known) candidates.set(`${c.namespace}/${c.name}`, c);
  for (const rule of rules)
    for (const named of rule.agentCards ?? []) {
      const namespace = named.namespace ?? targetNamespace;
      const key = `${namespace}/${named.name}`;
      if (!candidates.has(key)) candidates.set(key, { name: named.name, namespace });
    }
  return [...candidates.values()]
    .filter((c) => rules.every((r) => isAllowedCaller(r, c, targetNamespace)))
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

/** One peer per namespace: its Pods labelled with an allowed caller's name. */
function callerPeers(callers: readonly Caller[]): NetworkPolicyPeer[] {
  const byNamespace = new Map<string, Set<string>>();
  for (const c of callers) {
    const set = byNamespace.get(c.namespace) ?? new Set<string>();
    set.add(agentLabelValue(c.name));
    byNamespace.set(c.namespace, set);
  }
  return [...byNamespace.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([namespace, names]) => ({
      namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: namespace } },
      podSelector: { matchExpressions: [{ key: AGENT_LABEL, operator: 'In', values: [...names].sort() }] },
    }));
}

function operatorPeer(op: OperatorPods): NetworkPolicyPeer {
  return {
    namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: op.namespace } },
    podSelector: Object.keys(op.labels).length ? { matchLabels: { ...op.labels } } : {},
  };
}

// ---- the NetworkPolicy ------------------------------------------------------------------------

interface LabelSelectorJson {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

export interface NetworkPolicyPeer {
  namespaceSelector?: LabelSelectorJson;
  podSelector?: LabelSelectorJson;
}

export interface IngressRule {
  from?: NetworkPolicyPeer[];
  ports?: NetworkPort[];
}

export interface NetworkPolicyObject {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ownerReferences: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller: true }>;
  };
  spec: {
    podSelector: LabelSelectorJson;
    policyTypes: ['Ingress'];
    ingress: IngressRule[];
  };
}

/** The name of an agent's NetworkPolicy: `agentcard-<card>`, hashed when longer than a name may be. */
export function networkPolicyName(cardName: string): string {
  const name = `agentcard-${cardName}`;
  if (name.length <= 253) return name;
  const hash = createHash('sha256').update(cardName).digest('hex').slice(0, 16);
  return `${name.slice(0, 253 - 17)}-${hash}`;
}

export interface NetworkPlan {
  /** The NetworkPolicy wanted; undefined: none (a live one is deleted). */
  policy?: NetworkPolicyObject;
  /** The policies whose trust rules quarantine the card. */
  quarantinedBy: string[];
  /** The Enforce policies with a callers rule that select the card. */
  callersFrom: string[];
  /** The A2A ports found, and what could not be resolved. */
  ports?: PortResolution;
  /** Whether every port but the card's is restricted (quarantine, or ports not all numbers). */
  closed: boolean;
}

/** Every interface URL of every audience's card. */
function interfaceUrls(subject: Subject): string[] {
  const urls: string[] = [];
  for (const view of subject.cards ?? []) {
    const list = view.card.supportedInterfaces;
    if (!Array.isArray(list)) continue;
    for (const i of list as Array<Record<string, unknown>>) if (typeof i.url === 'string') urls.push(i.url);
  }
  return urls;
}

/** The NetworkPolicy of one AgentCard (see the module comment for every rule). */
export function planNetworkPolicy(input: AgentInput): NetworkPlan {
  const { subject } = input;
  const enforced = input.policies.filter(
    (p) => p.policy.spec.mode === 'Enforce' && selects(p.policy, subject),
  );
  const quarantinedBy = enforced
    .filter(
      (p) =>
        p.policy.spec.quarantine === true &&
        evaluatePolicy(p.policy, subject).rules.some((r) => r.kind === 'trust' && r.verdict === 'Fail'),
    )
    .map((p) => policyRef(p.policy));
  const withCallers = enforced.filter((p) => p.policy.spec.rules.some((r) => ruleKind(r) === 'callers'));
  const callersFrom = withCallers.map((p) => policyRef(p.policy));
  if (!quarantinedBy.length && !withCallers.length) return { quarantinedBy, callersFrom, closed: false };

  const cardPorts = CARD_PORTS.map((p) => ({ ...p }));
  const ingress: IngressRule[] = [
    // Discovery is public: the card's ports, from everyone.
    { ports: cardPorts },
    // The operator: every port (its probes call the A2A interfaces).
    { from: [operatorPeer(input.operator)] },
  ];
  let ports: PortResolution | undefined;
  let closed = true;
  if (!quarantinedBy.length) {
    const rules = withCallers.flatMap((p) =>
      p.policy.spec.rules.flatMap((r) => (r.callers ? [r.callers] : [])),
    );
    const peers = callerPeers(allowedCallers(rules, input.callers, subject.namespace));
    ports = resolveA2aPorts(interfaceUrls(subject), subject.namespace, input.services);
    // A card port is public whatever an interface says.
    const a2a = ports.ports.filter(
      (p) => !CARD_PORTS.some((c) => c.protocol === p.protocol && c.port === p.port),
    );
    // An interface naming a Service of the namespace whose port is not known would leave its
    // port among "every other port": closed, as when a port is a name or none is known.
    const numeric =
      a2a.length > 0 && a2a.every((p) => typeof p.port === 'number') && ports.unresolved.length === 0;
    closed = !numeric;
    if (peers.length) ingress.push(numeric ? { from: peers, ports: a2a } : { from: peers });
    if (numeric) {
      const taken = (protocol: NetworkPort['protocol']) =>
        a2a.filter((p) => p.protocol === protocol).map((p) => p.port as number);
      const udp = taken('UDP');
      // Every other port, from everyone (SCTP is rarely served; it stays closed).
      ingress.push({
        ports: [
          ...portRangesExcept('TCP', taken('TCP')),
          ...(udp.length ? portRangesExcept('UDP', udp) : [{ protocol: 'UDP' as const }]),
        ],
      });
    }
  }
  const sources = [...new Set([...quarantinedBy, ...callersFrom])];
  const policy: NetworkPolicyObject = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: networkPolicyName(subject.name),
      namespace: subject.namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [NETWORK_POLICY_LABEL]: 'true' },
      annotations: {
        [AGENT_CARD_REF_ANNOTATION]: `${subject.namespace}/${subject.name}`,
        [POLICIES_ANNOTATION]: sources.join(', '),
      },
      ownerReferences: [
        { apiVersion: API_VERSION, kind: KIND, name: subject.name, uid: input.uid, controller: true },
      ],
    },
    spec: {
      podSelector: { matchLabels: { [AGENT_LABEL]: agentLabelValue(subject.name) } },
      policyTypes: ['Ingress'],
      ingress,
    },
  };
  return { policy, quarantinedBy, callersFrom, ...(ports ? { ports } : {}), closed };
}

// ---- drift ------------------------------------------------------------------------------------

const isEmpty = (v: unknown) =>
  v === undefined ||
  v === null ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0);

/**
 * Whether every field the operator sets is in `live` with the same value (the API server may add
 * defaults, and store an empty map or list as absent); lists must have the same length, so a peer
 * or port added by hand is drift.
 */
export function containsDesired(want: unknown, live: unknown): boolean {
  if (isEmpty(want)) return isEmpty(live) || want === live;
  if (Array.isArray(want))
    return (
      Array.isArray(live) && live.length === want.length && want.every((w, i) => containsDesired(w, live[i]))
    );
  if (typeof want === 'object') {
    if (!live || typeof live !== 'object' || Array.isArray(live)) return false;
    return Object.entries(want as Record<string, unknown>).every(([k, v]) =>
      containsDesired(v, (live as Record<string, unknown>)[k]),
    );
  }
  return want === live;
}

/** Whether a live generated NetworkPolicy differs from the wanted one (spec, labels, annotations, owner). */
export function networkPolicyDrift(
  live: { metadata?: object; spec?: unknown },
  want: NetworkPolicyObject,
): boolean {
  type Meta = { labels?: unknown; annotations?: unknown; ownerReferences?: unknown };
  const l = (live.metadata ?? {}) as Meta;
  return !(
    containsDesired(want.spec, live.spec) &&
    containsDesired(want.metadata.labels, l.labels) &&
    containsDesired(want.metadata.annotations, l.annotations) &&
    containsDesired(want.metadata.ownerReferences, l.ownerReferences)
  );
}

/**
 * Why a callers rule's NetworkPolicy fails closed (every port but the card's restricted), for the
 * AgentCard's Event; undefined when it does not (or it is a quarantine, which says so itself).
 */
export function closedReason(plan: NetworkPlan): string | undefined {
  if (!plan.policy || !plan.closed || plan.quarantinedBy.length || !plan.ports) return undefined;
  const { ports, unresolved } = plan.ports;
  const why = unresolved.length
    ? unresolved.join('; ')
    : ports.some((p) => typeof p.port === 'string')
      ? `the A2A port ${ports
          .filter((p) => typeof p.port === 'string')
          .map((p) => p.port)
          .join(', ')} is a name, and NetworkPolicy cannot say "every port but this one"`
      : 'no interface URL names a Service of the namespace';
  return `${why}: every port of the agent's Pods but the card's admits only the allowed callers and the operator`;
}
