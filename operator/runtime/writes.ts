/**
 * The one write path of every controller: published ConfigMaps and the status subresource, by
 * server-side apply (kube/api.ts), and the objects a controller owns (create, apply, replace,
 * delete with a UID precondition), every write counted; with
 * - read-your-writes (write-overlay.ts): what a write returned is read until the cache
 *   moves past it;
 * - echo detection: the watch event of the controller's own write (its resourceVersion, or, when
 *   the event beats the response, the same content as the apply in flight) queues nothing;
 * - one rule for failures: an outage (kube/health.ts) is thrown as it is, so the reconcile stops
 *   there and the work queue, held by the outage gate, retries it once the API server answers; a
 *   422 (the API server refuses the object itself) is final: the same bytes would fail forever, so
 *   it is reported in a condition and not retried until the object changes; anything else is
 *   reported and retried with backoff.
 */
import type { KubernetesObject, V1ConfigMap } from '@kubernetes/client-node';
import { applyConfigMap, applyStatus, type ResourceRef } from '../kube/api.ts';
import { CONTENT_TYPE, type KubeClient } from '../kube/client.ts';
import { apiStatusCode, describeApiError, isNotFound } from '../kube/errors.ts';
import { isOutage } from '../kube/health.ts';
import { configMapUpToDate, type ConfigMapObject, type LiveConfigMap } from './configmaps.ts';
import { objectKey } from './keys.ts';
import { WriteOverlay } from './write-overlay.ts';

/** How publishing ended: all written, or the first failure (not an outage: that is thrown). */
export type PublishOutcome =
  | { ok: true }
  | {
      ok: false;
      /** The ConfigMap that failed. */
      name: string;
      error: unknown;
      /** One line for conditions and logs (no secret: the API server's Status message). */
      message: string;
      /** 422: final until the object changes; otherwise retried with backoff. */
      rejected: boolean;
    };

export interface WriterOptions {
  client: KubeClient;
  /**
   * Counts each write attempt (the operator's agentcard_api_writes_total): `configmap`, `status`,
   * or the resource named to the owned-object writes (`agentcard`, `certificate`).
   */
  onWrite?: (resource: string) => void;
}

export class Writer<Owner extends KubernetesObject> {
  private readonly opts: WriterOptions;
  private readonly configMaps = new WriteOverlay<V1ConfigMap>();
  private readonly owners = new WriteOverlay<Owner>();
  /**
   * ConfigMaps being applied now (key → what was sent): the watch event of an apply often arrives
   * before its response, and would otherwise look like someone else's change.
   */
  private readonly applying = new Map<string, ConfigMapObject>();

  constructor(opts: WriterOptions) {
    this.opts = opts;
  }

  /** The freshest view of a ConfigMap: what this controller wrote, until the cache has it. */
  readConfigMap<T extends V1ConfigMap>(
    namespace: string,
    name: string,
    cached: T | undefined,
  ): T | undefined {
    return this.configMaps.read(objectKey(namespace, name), cached) as T | undefined;
  }

  /** The freshest view of an owner (the status this controller wrote, until the cache has it). */
  readOwner(key: string, cached: Owner | undefined): Owner | undefined {
    return this.owners.read(key, cached);
  }

  /** Whether a ConfigMap event is the echo of this controller's own apply. */
  isConfigMapEcho(cm: LiveConfigMap & V1ConfigMap): boolean {
    const key = objectKey(cm.metadata?.namespace ?? '', cm.metadata?.name ?? '');
    if (this.configMaps.isOwnEcho(key, cm.metadata?.resourceVersion)) return true;
    const applying = this.applying.get(key);
    return applying !== undefined && configMapUpToDate(cm, applying);
  }

  /** Whether an owner's update is the echo of this controller's own status write. */
  isOwnerEcho(key: string, resourceVersion: string | undefined): boolean {
    return this.owners.isOwnEcho(key, resourceVersion);
  }

  forgetConfigMap(namespace: string, name: string): void {
    this.configMaps.forget(objectKey(namespace, name));
  }

  forgetOwner(key: string): void {
    this.owners.forget(key);
  }

  /**
   * Applies the ConfigMaps in order and stops at the first failure. `cachedVersion` gives the
   * resourceVersion the cache holds for a name (the overlay's starting point).
   */
  async publish(
    configMaps: readonly ConfigMapObject[],
    cachedVersion: (namespace: string, name: string) => string | undefined,
    signal: AbortSignal,
  ): Promise<PublishOutcome> {
    for (const cm of configMaps) {
      const { name, namespace } = cm.metadata;
      const key = objectKey(namespace, name);
      const before = cachedVersion(namespace, name);
      this.applying.set(key, cm);
      try {
        this.opts.onWrite?.('configmap');
        const stored = await applyConfigMap(this.opts.client, cm, signal);
        delete stored.metadata?.managedFields;
        this.configMaps.remember(key, before, stored);
      } catch (err) {
        if (isOutage(err) || signal.aborted) throw err;
        return {
          ok: false,
          name,
          error: err,
          message: describeApiError(err),
          rejected: apiStatusCode(err) === 422,
        };
      } finally {
        this.applying.delete(key);
      }
    }
    return { ok: true };
  }

  /**
   * Applies `body` (apiVersion, kind, metadata, status) on the status subresource; `before` is the
   * owner's resourceVersion the reconcile read. False when the owner is gone (deleted meanwhile).
   */
  async writeStatus(
    key: string,
    ref: ResourceRef,
    namespace: string | undefined,
    name: string,
    body: Record<string, unknown>,
    before: string | undefined,
    signal: AbortSignal,
  ): Promise<boolean> {
    try {
      this.opts.onWrite?.('status');
      const stored = (await applyStatus(this.opts.client, ref, namespace, name, body, signal)) as Owner;
      delete stored.metadata?.managedFields;
      this.owners.remember(key, before, stored);
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  // ---- objects the controller owns (adopted AgentCards, requested Certificates) -----------------

  /**
   * Server-side apply of an object this controller owns, under its own field manager (force: the
   * fields are its to set). `resource` names it in the write counter.
   */
  async applyOwned(
    resource: string,
    path: string,
    body: Record<string, unknown>,
    fieldManager: string,
    signal: AbortSignal,
  ): Promise<void> {
    this.opts.onWrite?.(resource);
    await this.opts.client.request('PATCH', path, {
      query: { fieldManager, force: true },
      body,
      contentType: CONTENT_TYPE.apply,
      signal,
    });
  }

  /** Creates an owned object in `collection`; a 409 (it exists) is thrown for the caller to judge. */
  async create<T>(resource: string, collection: string, body: unknown, signal: AbortSignal): Promise<T> {
    this.opts.onWrite?.(resource);
    return this.opts.client.request<T>('POST', collection, { body, signal });
  }

  /**
   * Replaces an owned object whole (a PUT with the resourceVersion read): fields someone set by
   * hand go, which server-side apply would keep under another manager.
   */
  async replace<T>(resource: string, path: string, body: unknown, signal: AbortSignal): Promise<T> {
    this.opts.onWrite?.(resource);
    return this.opts.client.request<T>('PUT', path, { body, signal });
  }

  /**
   * Deletes an owned object, only the one of this UID (a precondition: never a newer object that
   * took its name). False when it is already gone, or was replaced meanwhile (409).
   */
  async deleteOwned(resource: string, path: string, uid: string, signal: AbortSignal): Promise<boolean> {
    this.opts.onWrite?.(resource);
    try {
      await this.opts.client.request('DELETE', path, { body: { preconditions: { uid } }, signal });
      return true;
    } catch (err) {
      if (isNotFound(err) || apiStatusCode(err) === 409) return false;
      throw err;
    }
  }
}
