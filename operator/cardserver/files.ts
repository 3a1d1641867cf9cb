/**
 * A published ConfigMap as the file set the sidecar reads from its volume (sidecar/version.ts
 * prepares both alike), so the central server checks and answers exactly what a sidecar would.
 *
 * Last-Modified: a ConfigMap has no modification time; the latest managedFields time (when a
 * manager, here the controller's server-side apply, last changed it) stands in, else its
 * creation time. Every replica reads the same value, so their validators agree.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { FileContent, FileSet } from '../sidecar/version.ts';

export function configMapFiles(cm: V1ConfigMap): FileSet {
  const mtimeMs = changedAtMs(cm);
  const files = new Map<string, FileContent>();
  for (const [key, value] of Object.entries(cm.data ?? {})) {
    const bytes = Buffer.from(value, 'utf8');
    files.set(key, { bytes, size: bytes.length, mtimeMs });
  }
  return files;
}

export function changedAtMs(cm: V1ConfigMap): number {
  let latest = 0;
  for (const f of cm.metadata?.managedFields ?? []) {
    const t = f.time ? new Date(f.time).getTime() : NaN;
    if (!Number.isNaN(t) && t > latest) latest = t;
  }
  if (latest > 0) return latest;
  const created = cm.metadata?.creationTimestamp ? new Date(cm.metadata.creationTimestamp).getTime() : NaN;
  return Number.isNaN(created) ? 0 : created;
}
