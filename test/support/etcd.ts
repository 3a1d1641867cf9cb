// Direct access to a control plane's etcd, for tests that need what only etcd can do (such as
// compacting its history). Uses etcd's JSON gateway with the apiserver's etcd client certificate.
// Without a target: the shared control plane of this checkout.
import { join } from 'node:path';
import { readState } from '../controlplane/control.ts';
import { clusterDir } from '../controlplane/paths.ts';
import { clientTls, tlsRequest } from '../controlplane/tls-request.ts';

/** Which etcd: its client URL and the pki folder of its control plane. */
export interface EtcdTarget {
  etcd: string;
  pkiDir: string;
}

function sharedTarget(): EtcdTarget {
  const state = readState();
  if (!state) throw new Error('the control plane is not running (no .cluster/state.json)');
  return { etcd: state.etcd, pkiDir: join(clusterDir, 'pki') };
}

async function etcdCall(target: EtcdTarget, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await tlsRequest(`${target.etcd}${path}`, clientTls(target.pkiDir, 'etcd-client'), { body });
  if (res.status !== 200) throw new Error(`etcd ${path} answered ${res.status}: ${res.body.slice(0, 200)}`);
  return JSON.parse(res.body) as Record<string, unknown>;
}

/** etcd's current revision (the newest resourceVersion the apiserver can hand out). */
export async function etcdRevision(target: EtcdTarget = sharedTarget()): Promise<number> {
  const res = await etcdCall(target, '/v3/kv/range', { key: Buffer.from('/').toString('base64'), limit: 1 });
  return Number((res.header as { revision: string }).revision);
}

/** Compacts etcd's history up to its current revision, so older resourceVersions can no longer be watched from. */
export async function compactEtcd(target: EtcdTarget = sharedTarget()): Promise<number> {
  const revision = await etcdRevision(target);
  await etcdCall(target, '/v3/kv/compaction', { revision: String(revision), physical: true });
  return revision;
}
