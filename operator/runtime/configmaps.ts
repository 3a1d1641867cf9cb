/**
 * ConfigMaps as every controller publishes them (server-side apply through writes.ts): the
 * object applied, the part of a live one a comparison needs, whether the live one already holds
 * what would be applied, digests of the bytes served, and the API server's size limit.
 */
import { createHash } from 'node:crypto';

export interface ConfigMapObject {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    ownerReferences: Array<{
      apiVersion: string;
      kind: string;
      name: string;
      uid: string;
      controller: boolean;
    }>;
  };
  data: Record<string, string>;
}

/** The subset of a live ConfigMap the comparison needs (typed or raw JSON objects both fit). */
export interface LiveConfigMap {
  metadata?: {
    labels?: Record<string, string>;
    ownerReferences?: Array<{
      apiVersion?: string;
      kind?: string;
      name?: string;
      uid?: string;
      controller?: boolean;
    }>;
    deletionTimestamp?: unknown;
  };
  data?: Record<string, string>;
  /** Values the cache keeps only as valueDigest(value) (configmap-cache.ts), by key. */
  dataDigests?: Record<string, string>;
}

/**
 * Whether the live ConfigMap already holds what `desired` would apply: the same data (every key,
 * no extra; a value the cache holds as a digest is compared by digest), our labels and our
 * controller ownerReference. Other labels or owners added by
 * someone else do not force a write.
 */
export function configMapUpToDate(live: LiveConfigMap | undefined, desired: ConfigMapObject): boolean {
  if (!live || live.metadata?.deletionTimestamp) return false;
  const data = live.data ?? {};
  const digests = live.dataDigests ?? {};
  const want = desired.data;
  if (Object.keys(data).length + Object.keys(digests).length !== Object.keys(want).length) return false;
  for (const [k, v] of Object.entries(want)) {
    if (Object.hasOwn(data, k) ? data[k] !== v : digests[k] !== valueDigest(v)) return false;
  }
  const labels = live.metadata?.labels ?? {};
  for (const [k, v] of Object.entries(desired.metadata.labels)) if (labels[k] !== v) return false;
  const ref = desired.metadata.ownerReferences[0]!;
  return (live.metadata?.ownerReferences ?? []).some(
    (r) =>
      r.uid === ref.uid && r.controller === true && r.kind === ref.kind && r.apiVersion === ref.apiVersion,
  );
}

/** `sha256:<hex>` of the served bytes (UTF-8), as status.card.digest reports it. */
export function digestOf(text: string): string {
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

/**
 * The SHA-256 of a data value (UTF-8) in base64, 44 characters: how the ConfigMap cache keeps
 * the values it does not need verbatim, and how a desired value is compared with them.
 */
export function valueDigest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64');
}

export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * The most a ConfigMap may hold: the API server refuses (422) one whose data exceeds 1 MiB
 * (core.MaxSecretSize, applied to ConfigMaps by ValidateConfigMap). Keys are counted too here,
 * which is a few dozen bytes stricter than the server.
 */
export const MAX_CONFIGMAP_DATA_BYTES = 1024 * 1024;

/** The bytes a ConfigMap's data takes, as the API server's size check counts them (plus keys). */
export function configMapDataBytes(data: Record<string, string>): number {
  let total = 0;
  for (const [key, value] of Object.entries(data)) total += byteLength(key) + byteLength(value);
  return total;
}

/**
 * Why these files cannot be published in one ConfigMap (all of its data: every rendering and
 * variant), or undefined when they fit.
 */
export function configMapSizeProblem(
  data: Record<string, string>,
  limit = MAX_CONFIGMAP_DATA_BYTES,
): string | undefined {
  const total = configMapDataBytes(data);
  if (total <= limit) return undefined;
  const parts = Object.entries(data)
    .filter(([, v]) => byteLength(v) >= 1024)
    .sort(([, a], [, b]) => byteLength(b) - byteLength(a))
    .map(([k, v]) => `${k} ${byteLength(v)}`)
    .join(', ');
  return `the published files would take ${total} bytes (${parts}), over the ConfigMap limit of ${limit} bytes; make the card smaller (descriptions, skills, examples, extension params)`;
}
