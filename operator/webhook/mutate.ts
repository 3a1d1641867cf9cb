/**
 * Sidecar injection as a pure function: an AdmissionReview for a Pod in, an AdmissionReview
 * response with a JSON Patch (RFC 6902) out. The webhook never denies a Pod; it only adds the
 * sidecar to Pods that ask for it.
 *
 * Rules:
 * - opt-in per Pod with the annotation `agentcard.dev/inject: <AgentCard name>`; the AgentCard
 *   must be in the Pod's namespace (a `namespace/name` value naming another one is ignored);
 * - Pods in the operator's own namespace are never touched;
 * - idempotent: a Pod that already has a container named `agentcard-sidecar` (in containers or
 *   initContainers) gets no patch, so reinvocation is safe;
 * - native sidecar (an init container with restartPolicy Always, Kubernetes 1.29+) or an
 *   ordinary container, chosen by the configured mode;
 * - the container passes the `restricted` Pod Security Standard;
 * - the Pod is labelled `agentcard.dev/agent-card: <AgentCard name>` (agentLabelValue), so that
 *   NetworkPolicies can select the agent and its callers (operator/controllers/network/). A Pod
 *   that serves its own card gets no sidecar and no label: its owner adds the label.
 */
import type { V1Container, V1Pod, V1Volume } from '@kubernetes/client-node';
import {
  AGENT_LABEL,
  agentLabelValue,
  CONFIGMAP_SUFFIX,
  configMapName,
  INJECT_ANNOTATION,
  SIDECAR_CONTAINER,
} from '../api/names.ts';
import { SIDECAR_UID, sidecarEnv } from '../sidecar/runtime.ts';
import { injectedNginxFiles, nginxContainer, nginxVolumes } from './nginx-container.ts';
import { sidecarProbes } from './probes.ts';

export const CARD_VOLUME = 'agentcard-card';
export const CARD_DIR = '/etc/agentcard';
export const SIDECAR_PORT = 8095;
export const SIDECAR_METRICS_PORT = 8096;
export const SIDECAR_PORT_NAME = 'agent-card';

export type SidecarMode = 'auto' | 'native' | 'container';
export const SIDECAR_MODES: readonly SidecarMode[] = ['auto', 'native', 'container'];

/** What serves the card in the Pod: the agentcard sidecar (Node.js) or a stock nginx. */
export type SidecarServer = 'node' | 'nginx';
export const SIDECAR_SERVERS: readonly SidecarServer[] = ['node', 'nginx'];

export interface InjectionConfig {
  sidecarImage: string;
  mode: SidecarMode;
  /** Default `node`. */
  server?: SidecarServer | undefined;
  /** The nginx image (required for the nginx server). */
  nginxImage?: string | undefined;
  /** Select the card by X-Forwarded-Host (the proxy in front of the Pods is trusted to set it). */
  trustForwardedHost?: boolean | undefined;
  /** The API server's version, for `auto` (native sidecars need 1.29 or newer). */
  serverVersion?: { major: string; minor: string } | undefined;
  operatorNamespace: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
}

export type JsonPatchOp = { op: 'add'; path: string; value: unknown };

export type Decision =
  | { inject: true; card: string; native: boolean; patch: JsonPatchOp[] }
  /** `warn`: the Pod asked for the sidecar and should be told why it did not get it. */
  | { inject: false; reason: string; card?: string; warn?: boolean };

// RFC 1123 subdomain: the rule for AgentCard (and ConfigMap) names.
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether native sidecars are used for this mode and server version. */
export function useNativeSidecar(mode: SidecarMode, version?: { major: string; minor: string }): boolean {
  if (mode !== 'auto') return mode === 'native';
  if (!version) return false; // unknown server: the ordinary container works everywhere
  const major = parseInt(version.major, 10);
  const minor = parseInt(version.minor, 10); // "29+" on some distributions
  return major > 1 || (major === 1 && minor >= 29);
}

/** Decides about one Pod in `namespace`. */
export function decide(pod: V1Pod, namespace: string, cfg: InjectionConfig): Decision {
  const requested = pod.metadata?.annotations?.[INJECT_ANNOTATION];
  if (requested === undefined) return { inject: false, reason: 'no inject annotation' };
  if (namespace === cfg.operatorNamespace) {
    return { inject: false, reason: "the operator's namespace is excluded" };
  }
  let card = requested.trim();
  const slash = card.indexOf('/');
  if (slash >= 0) {
    const ns = card.slice(0, slash);
    if (ns !== namespace) {
      return {
        inject: false,
        reason: `AgentCard ${card} is not in the Pod's namespace ${namespace}`,
        card,
        warn: true,
      };
    }
    card = card.slice(slash + 1);
  }
  // The ConfigMap name adds its suffix and must stay within 253.
  if (!DNS_SUBDOMAIN.test(card) || card.length > 253 - CONFIGMAP_SUFFIX.length) {
    return {
      inject: false,
      reason: `'${requested.slice(0, 100)}' is not a valid AgentCard name`,
      warn: true,
    };
  }
  const spec = pod.spec;
  if (!spec) return { inject: false, reason: 'the Pod has no spec', card };
  const all = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  if (all.some((c) => c.name === SIDECAR_CONTAINER)) {
    return { inject: false, reason: 'the sidecar is already there', card };
  }
  const taken = all.flatMap((c) => (c.ports ?? []).map((p) => p.containerPort));
  const clash = [SIDECAR_PORT, SIDECAR_METRICS_PORT].find((p) => taken.includes(p));
  if (clash !== undefined) {
    return {
      inject: false,
      reason: `port ${clash} is already used by a container of the Pod`,
      card,
      warn: true,
    };
  }
  const existingVolume = spec.volumes?.find((v) => v.name === CARD_VOLUME);
  if (existingVolume && existingVolume.configMap?.name !== configMapName(card)) {
    return {
      inject: false,
      reason: `the Pod already has a different volume named ${CARD_VOLUME}`,
      card,
      warn: true,
    };
  }

  const nginx = cfg.server === 'nginx';
  const volumes = nginx ? nginxVolumes() : [];
  const clashingVolume = volumes.find((v) => spec.volumes?.some((o) => o.name === v.name));
  if (clashingVolume) {
    return {
      inject: false,
      reason: `the Pod already has a volume named ${clashingVolume.name}`,
      card,
      warn: true,
    };
  }

  const native = useNativeSidecar(cfg.mode, cfg.serverVersion);
  const container = nginx ? injectedNginxSidecar(cfg, native) : sidecarContainer(cfg, native);
  const patch: JsonPatchOp[] = [];
  if (nginx) {
    // The Pod has annotations: the inject annotation brought it here. `/` in a key is `~1`.
    const files = injectedNginxFiles({
      cardDir: CARD_DIR,
      port: SIDECAR_PORT,
      trustForwardedHost: cfg.trustForwardedHost ?? false,
    });
    for (const [annotation, text] of Object.entries(files)) {
      patch.push({ op: 'add', path: `/metadata/annotations/${jsonPointerToken(annotation)}`, value: text });
    }
  }
  if (native) {
    // First among the init containers, so the card is served before anything else starts.
    if (spec.initContainers?.length)
      patch.push({ op: 'add', path: '/spec/initContainers/0', value: container });
    else patch.push({ op: 'add', path: '/spec/initContainers', value: [container] });
  } else {
    patch.push({ op: 'add', path: '/spec/containers/-', value: container });
  }
  const added = [...(existingVolume ? [] : [cardVolume(card)]), ...volumes];
  if (added.length > 0) {
    if (spec.volumes?.length) {
      for (const volume of added) patch.push({ op: 'add', path: '/spec/volumes/-', value: volume });
    } else {
      patch.push({ op: 'add', path: '/spec/volumes', value: added });
    }
  }
  patch.push(agentLabelOp(pod, card));
  return { inject: true, card, native, patch };
}

/**
 * The JSON Patch operation that labels the Pod with its agent: one key added to the labels, or
 * the labels map itself when the Pod has none (RFC 6902 section 4.1: "add" needs the parent).
 * A value the Pod already had for the label is replaced: the Pod serves this card.
 */
export function agentLabelOp(pod: V1Pod, card: string): JsonPatchOp {
  const value = agentLabelValue(card);
  const labels = pod.metadata?.labels;
  if (labels && typeof labels === 'object')
    return { op: 'add', path: `/metadata/labels/${jsonPointerToken(AGENT_LABEL)}`, value };
  return { op: 'add', path: '/metadata/labels', value: { [AGENT_LABEL]: value } };
}

/** RFC 6901 section 3: `~` and `/` escaped in a JSON Pointer reference token. */
function jsonPointerToken(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function cardVolume(card: string): V1Volume {
  // optional: a Pod created before its AgentCard is published still starts; the sidecar
  // answers 503 until the kubelet fills the volume.
  return { name: CARD_VOLUME, configMap: { name: configMapName(card), optional: true } };
}

function injectedNginxSidecar(cfg: InjectionConfig, native: boolean): V1Container {
  if (!cfg.nginxImage) throw new Error('the nginx sidecar server needs an nginx image');
  const container = nginxContainer({
    name: SIDECAR_CONTAINER,
    image: cfg.nginxImage,
    imagePullPolicy: cfg.imagePullPolicy ?? 'IfNotPresent',
    port: SIDECAR_PORT,
    portName: SIDECAR_PORT_NAME,
    cardVolume: CARD_VOLUME,
    cardDir: CARD_DIR,
  });
  if (native) container.restartPolicy = 'Always';
  return container;
}

export function sidecarContainer(cfg: InjectionConfig, native: boolean): V1Container {
  const container: V1Container = {
    name: SIDECAR_CONTAINER,
    image: cfg.sidecarImage,
    imagePullPolicy: cfg.imagePullPolicy ?? 'IfNotPresent',
    args: [
      'sidecar',
      '--dir',
      CARD_DIR,
      '--port',
      String(SIDECAR_PORT),
      ...(cfg.trustForwardedHost ? ['--trust-forwarded-host'] : []),
    ],
    ports: [
      { name: SIDECAR_PORT_NAME, containerPort: SIDECAR_PORT, protocol: 'TCP' },
      { name: 'agent-card-mon', containerPort: SIDECAR_METRICS_PORT, protocol: 'TCP' },
    ],
    env: sidecarEnv(),
    resources: {
      requests: { cpu: '10m', memory: '64Mi' },
      limits: { memory: '128Mi' },
    },
    ...sidecarProbes(SIDECAR_METRICS_PORT),
    // The `restricted` Pod Security Standard, field by field.
    securityContext: {
      runAsNonRoot: true,
      runAsUser: SIDECAR_UID,
      runAsGroup: SIDECAR_UID,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    volumeMounts: [{ name: CARD_VOLUME, mountPath: CARD_DIR, readOnly: true }],
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
  if (native) container.restartPolicy = 'Always';
  return container;
}

// ---------------------------------------------------------------------------------------------
// AdmissionReview (admission.k8s.io/v1)

export interface AdmissionReviewRequest {
  uid: string;
  kind?: { group?: string; version?: string; kind?: string };
  namespace?: string;
  operation?: string;
  object?: V1Pod;
  name?: string;
}

export interface AdmissionReviewResponse {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  response: {
    uid: string;
    allowed: true;
    patchType?: 'JSONPatch';
    patch?: string;
    warnings?: string[];
  };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether `list` is absent or an array of objects (the lists decide() walks). */
function objectList(list: unknown, where: string): string | undefined {
  if (list === undefined || list === null) return undefined;
  if (!Array.isArray(list)) return `${where} is not a list`;
  const bad = list.findIndex((item) => !isObject(item));
  return bad >= 0 ? `${where}[${bad}] is not an object` : undefined;
}

/**
 * What is wrong with the shape of the fields of a Pod that decide() reads, or undefined. The API
 * server sends decoded Pods, so this only fails on reviews that do not come from it; they get a
 * 400 that names the field instead of a 500 from a TypeError.
 */
export function podShapeProblem(pod: unknown): string | undefined {
  if (!isObject(pod)) return 'request.object is not an object';
  const { metadata, spec } = pod;
  if (metadata !== undefined) {
    if (!isObject(metadata)) return 'request.object.metadata is not an object';
    const { annotations } = metadata;
    if (annotations !== undefined && annotations !== null) {
      if (!isObject(annotations)) return 'request.object.metadata.annotations is not a map';
      const bad = Object.entries(annotations).find(([, v]) => typeof v !== 'string');
      if (bad) return `request.object.metadata.annotations["${bad[0].slice(0, 100)}"] is not a string`;
    }
    const { labels } = metadata;
    if (labels !== undefined && labels !== null && !isObject(labels))
      return 'request.object.metadata.labels is not a map';
    for (const field of ['name', 'namespace', 'generateName'] as const) {
      const value = metadata[field];
      if (value !== undefined && value !== null && typeof value !== 'string')
        return `request.object.metadata.${field} is not a string`;
    }
  }
  if (spec === undefined || spec === null) return undefined;
  if (!isObject(spec)) return 'request.object.spec is not an object';
  for (const field of ['initContainers', 'containers', 'volumes'] as const) {
    const problem = objectList(spec[field], `request.object.spec.${field}`);
    if (problem) return problem;
  }
  for (const field of ['initContainers', 'containers'] as const) {
    const containers = (spec[field] ?? []) as Array<Record<string, unknown>>;
    for (const [i, c] of containers.entries()) {
      const where = `request.object.spec.${field}[${i}]`;
      if (c.name !== undefined && typeof c.name !== 'string') return `${where}.name is not a string`;
      const ports = objectList(c.ports, `${where}.ports`);
      if (ports) return ports;
    }
  }
  for (const [i, v] of ((spec.volumes ?? []) as Array<Record<string, unknown>>).entries()) {
    if (v.configMap !== undefined && v.configMap !== null && !isObject(v.configMap))
      return `request.object.spec.volumes[${i}].configMap is not an object`;
  }
  return undefined;
}

/** Reads the request part of an AdmissionReview, or names what is wrong with it. */
export function parseReview(body: unknown): { request: AdmissionReviewRequest } | { error: string } {
  if (typeof body !== 'object' || body === null) return { error: 'body is not a JSON object' };
  const review = body as { apiVersion?: unknown; kind?: unknown; request?: unknown };
  if (review.kind !== 'AdmissionReview') return { error: "kind is not 'AdmissionReview'" };
  if (review.apiVersion !== 'admission.k8s.io/v1')
    return { error: "apiVersion is not 'admission.k8s.io/v1'" };
  const request = review.request as AdmissionReviewRequest | undefined;
  if (!isObject(request) || typeof request.uid !== 'string' || request.uid === '')
    return { error: 'request.uid is missing' };
  if (request.kind !== undefined && !isObject(request.kind))
    return { error: 'request.kind is not an object' };
  if (request.namespace !== undefined && typeof request.namespace !== 'string')
    return { error: 'request.namespace is not a string' };
  if (request.kind?.kind === 'Pod' && request.object !== undefined && request.object !== null) {
    const problem = podShapeProblem(request.object);
    if (problem) return { error: problem };
  }
  return { request };
}

/** The full answer to one review, with the decision for logging and metrics. */
export function review(
  request: AdmissionReviewRequest,
  cfg: InjectionConfig,
): { response: AdmissionReviewResponse; decision: Decision } {
  const base: AdmissionReviewResponse = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid: request.uid, allowed: true },
  };
  const isPod = request.kind?.kind === 'Pod' && (request.kind.group ?? '') === '';
  if (!isPod || request.operation !== 'CREATE' || !request.object) {
    return { response: base, decision: { inject: false, reason: 'not a Pod creation' } };
  }
  const namespace = request.namespace ?? request.object.metadata?.namespace ?? '';
  const decision = decide(request.object, namespace, cfg);
  if (!decision.inject) {
    // Tell the user why a Pod that asked for the sidecar did not get it (kubectl shows warnings).
    if (decision.warn) base.response.warnings = [`agentcard: sidecar not injected: ${decision.reason}`];
    return { response: base, decision };
  }
  base.response.patchType = 'JSONPatch';
  base.response.patch = Buffer.from(JSON.stringify(decision.patch)).toString('base64');
  return { response: base, decision };
}
