/**
 * The issuer controller: for each AgentCard whose signing key names a cert-manager issuer
 * (`spec.signing.keys[].issuerRef`), creates and owns a `certificates.cert-manager.io/v1`
 * Certificate (plan.ts) for the card's identity, keeps it as desired, and deletes it when the
 * card stops naming an issuer. Deleting the card deletes the Certificate through the garbage
 * collector (its ownerReference). cert-manager writes the Secret, labelled for the AgentCard
 * controller's signing-key watch, so a renewal re-signs the card within seconds.
 *
 * What it learns (the Certificate is pending, refused, cert-manager is missing) reaches the card
 * controller as an input of its signing key resolution (`issuance(key)`), and the card is queued
 * again when that changes: the AgentCard's status has one writer.
 *
 * When the cert-manager CRDs are not installed, it does not stop the process (every other part of
 * the operator keeps working): cards that name an issuer say so in their Signed condition, and it
 * looks for the CRD again every 30 s.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { KIND, OWNED_SELECTOR, signingCertificateName } from '../../api/names.ts';
import { collectionPath } from '../../kube/api.ts';
import type { KubeClient } from '../../kube/client.ts';
import { apiStatusCode, describeApiError, isConflict, isNotFound } from '../../kube/errors.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import type { Logger } from '../../log.ts';
import type { Informers } from '../agentcard/informers.ts';
import { objectKey, splitKey } from '../../runtime/keys.ts';
import type { HandlerResult, QueueGate, QueueObserver, WorkQueue } from '../../runtime/workqueue.ts';
import { waitForCaches } from '../../runtime/access.ts';
import type { Runnable } from '../../runtime/manager.ts';
import { StartupError } from '../../runtime/manager.ts';
import { controllerRunnables, reconcileQueue, WorkSignal } from '../../runtime/reconciler.ts';
import {
  CERTIFICATES_PATH,
  cardIdentity,
  certificateDrift,
  desiredCertificate,
  issuanceFromCertificate,
  issuerRefOf,
  ownedBy,
  serviceAccountOf,
  type CertificateObject,
  type IdentityPolicy,
} from './plan.ts';
import { type IssuanceState } from '../../signing/issuance.ts';

/** How often a missing cert-manager CRD is looked for again. */
const CRD_RETRY_MS = 30_000;

export interface IssuerControllerOptions {
  client: KubeClient;
  log: Logger;
  /** The AgentCard controller's caches by watched namespace ('' = all). */
  caches: ReadonlyMap<string, Informers>;
  policy: IdentityPolicy;
  resyncMs: number;
  /** Called when what a card's signing depends on changed: the card controller re-plans it. */
  onIssuance: (cardKey: string) => void;
  gate?: QueueGate;
  observer?: QueueObserver;
  onWrite?: (resource: string) => void;
}

type CardObject = KubernetesObject & {
  metadata: { name: string; namespace: string; uid: string; ownerReferences?: OwnerRef[] };
  spec?: unknown;
};
type OwnerRef = { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean };

export class IssuerController {
  readonly queue: WorkQueue;
  private readonly opts: IssuerControllerOptions;
  private readonly log: Logger;
  /** scope → informer of the owned Certificates (label selected). */
  private readonly certificates = new Map<string, ResilientInformer<CertificateObject & KubernetesObject>>();
  private readonly work = new WorkSignal();
  /** card key → what the card controller is told. */
  private readonly states = new Map<string, IssuanceState>();
  /** Whether the cert-manager CRDs are served: undefined until looked at. */
  private crdPresent: boolean | undefined;
  private crdTimer: NodeJS.Timeout | undefined;
  private started = false;

  constructor(opts: IssuerControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'issuer' });
    this.queue = reconcileQueue({
      reconcile: (key, signal) => this.reconcile(key, signal),
      work: this.work,
      concurrency: 2,
      gate: opts.gate,
      observer: opts.observer,
      log: this.log,
      failure: 'requesting the signing certificate failed; retrying',
      fields: (key) => ({ agentCard: key }),
    });
    for (const ns of opts.caches.keys()) {
      const inf = new ResilientInformer<CertificateObject & KubernetesObject>({
        name: `certificates/${ns || '*'}`,
        client: opts.client,
        path: collectionPath(CERTIFICATES_PATH, 'certificates', ns || undefined),
        labelSelector: OWNED_SELECTOR,
        log: opts.log,
      });
      const touched = (c: CertificateObject) => {
        const owner = c.metadata.ownerReferences?.find((r) => r.controller && r.kind === KIND);
        if (owner) this.queue.add(objectKey(c.metadata.namespace, owner.name));
      };
      inf.addEventHandler({ add: touched, update: (_o, c) => touched(c), delete: touched });
      this.certificates.set(ns, inf);
    }
    for (const scope of opts.caches.values()) {
      const onCard = (c: KubernetesObject) =>
        this.queue.add(objectKey(c.metadata?.namespace ?? '', c.metadata?.name ?? ''));
      scope.cards.on('add', onCard);
      scope.cards.on('update', onCard);
      scope.cards.on('delete', onCard);
    }
    opts.gate?.onRecover(() => {
      for (const inf of this.certificates.values()) inf.retryNow();
    });
  }

  /** What the card controller's signing key resolution is told about a card (undefined: nothing yet). */
  issuance(cardKey: string): IssuanceState | undefined {
    return this.states.get(cardKey);
  }

  unsynced(): string[] {
    if (!this.crdPresent) return [];
    return [...this.certificates.values()].filter((i) => !i.synced).map((i) => i.name);
  }

  runnables(): Runnable[] {
    return controllerRunnables({
      name: 'issuer',
      startCaches: async (signal) => {
        await this.lookForCrd(signal);
      },
      stopCaches: async () => {
        clearTimeout(this.crdTimer);
        await Promise.all([...this.certificates.values()].map((i) => i.stop()));
      },
      startReconciling: async (signal) => {
        const shared = [...this.opts.caches.values()].map((s) => s.cards);
        await waitForCaches([...shared, ...(this.crdPresent ? this.certificates.values() : [])], signal);
        if (this.queue.shuttingDown) return;
        const keys = this.allKeys();
        this.log.info('caches synced; requesting signing certificates', { agentCards: keys.length });
        for (const key of keys) this.queue.add(key, 'low');
        this.queue.startResync(this.opts.resyncMs, () => this.allKeys());
      },
      stopReconciling: () => this.queue.shutdown(),
      cancel: () => this.work.cancel(),
    });
  }

  /**
   * One LIST of at most one Certificate per scope: a 404 means the CRD is not installed (looked
   * for again every CRD_RETRY_MS, the cards told meanwhile); a 401 or 403 is a setting a restart
   * would meet again (the chart's certManager value), and ends the process like every other
   * controller's access check (runtime/access.ts).
   */
  private async lookForCrd(signal: AbortSignal): Promise<void> {
    try {
      for (const ns of this.certificates.keys())
        await this.opts.client.request(
          'GET',
          collectionPath(CERTIFICATES_PATH, 'certificates', ns || undefined),
          {
            query: { labelSelector: OWNED_SELECTOR, limit: 1 },
            signal,
          },
        );
    } catch (err) {
      if (signal.aborted) return;
      const status = apiStatusCode(err);
      if (status === 401 || status === 403)
        throw new StartupError(`cannot list cert-manager Certificates: ${describeApiError(err)}`);
      if (this.crdPresent !== false)
        this.log.warn(
          'cert-manager Certificates cannot be listed; cards that name an issuerRef are not signed until they can',
          {
            error: describeApiError(err),
            retryInMs: CRD_RETRY_MS,
          },
        );
      const first = this.crdPresent === undefined;
      this.crdPresent = false;
      if (first || isNotFound(err)) for (const key of this.allKeys()) this.queue.add(key, 'low');
      this.crdTimer = setTimeout(
        () =>
          void this.lookForCrd(signal).catch((e: unknown) =>
            this.log.error('cert-manager watch stopped', { error: describeApiError(e) }),
          ),
        CRD_RETRY_MS,
      );
      this.crdTimer.unref?.();
      return;
    }
    if (this.started) return;
    this.started = true;
    const was = this.crdPresent;
    this.crdPresent = true;
    await Promise.all([...this.certificates.values()].map((i) => i.start()));
    if (was === false) {
      this.log.info('cert-manager Certificates can be listed now');
      void waitForCaches([...this.certificates.values()], signal)
        .then(() => {
          for (const key of this.allKeys()) this.queue.add(key, 'low');
        })
        .catch(() => {});
    }
  }

  /** Every card that names an issuer, and every card an owned Certificate points to. */
  private allKeys(): string[] {
    const keys = new Set<string>();
    for (const scope of this.opts.caches.values())
      for (const c of scope.cards.list())
        if (issuerRefOf(c.spec) || this.states.has(objectKey(c.metadata.namespace, c.metadata.name)))
          keys.add(objectKey(c.metadata.namespace, c.metadata.name));
    if (this.crdPresent)
      for (const inf of this.certificates.values())
        for (const cert of inf.list()) {
          const owner = cert.metadata.ownerReferences?.find((r) => r.controller && r.kind === KIND);
          if (owner) keys.add(objectKey(cert.metadata.namespace, owner.name));
        }
    return [...keys];
  }

  private scope<T>(map: ReadonlyMap<string, T>, namespace: string): T | undefined {
    return map.get(namespace) ?? map.get('');
  }

  private setState(key: string, state: IssuanceState | undefined): void {
    const before = this.states.get(key);
    if (JSON.stringify(before) === JSON.stringify(state)) return;
    if (state) this.states.set(key, state);
    else this.states.delete(key);
    this.opts.onIssuance(key);
  }

  async reconcile(key: string, signal: AbortSignal): Promise<HandlerResult> {
    const [namespace, name] = splitKey(key);
    const card = this.scope(this.opts.caches, namespace)?.cards.get(name, namespace) as
      CardObject | undefined;
    const certName = signingCertificateName(name);
    const live = this.crdPresent
      ? this.scope(this.certificates, namespace)?.get(certName, namespace)
      : undefined;
    const issuerRef = card && !card.metadata.deletionTimestamp ? issuerRefOf(card.spec) : undefined;
    const log = this.log.child({ agentCard: key });

    if (!card || !issuerRef) {
      this.setState(key, undefined);
      // The card is gone (the garbage collector deletes the Certificate), or no longer names an
      // issuer: a Certificate it owns goes now.
      if (!card || !live || !ownedBy(live, card.metadata.uid)) return;
      try {
        await this.opts.client.request('DELETE', certificatePath(namespace, certName), {
          body: { preconditions: { uid: live.metadata.uid } },
          signal,
        });
        this.opts.onWrite?.('certificate');
        log.info('signing Certificate deleted: the card names no issuer', { certificate: certName });
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err;
      }
      return;
    }

    if (this.crdPresent === false) {
      this.setState(key, {
        sign: false,
        reason: 'CertificateNotRequested',
        message: `spec.signing names ${issuerRef.kind} "${issuerRef.name}", but cert-manager's Certificate API is not served in this cluster (install cert-manager, then the certificate is requested within ${CRD_RETRY_MS / 1000} s)`,
      });
      return;
    }
    if (this.crdPresent === undefined) return; // the caches' start will queue it again

    const serviceAccount = await this.serviceAccount(card, signal);
    if (!serviceAccount.ok) {
      this.setState(key, { sign: false, reason: 'CertificateNotRequested', message: serviceAccount.message });
      return;
    }
    const identity = cardIdentity(this.opts.policy, { namespace, name }, serviceAccount.name);
    if (!identity.ok) {
      this.setState(key, {
        sign: false,
        reason: 'CertificateNotRequested',
        message: `the card's identity cannot be built from the operator's identity template: ${identity.message}`,
      });
      return;
    }
    const want = desiredCertificate({
      card: { namespace, name, uid: card.metadata.uid },
      identity: identity.identity,
      issuerRef,
    });

    if (live && !ownedBy(live, card.metadata.uid)) {
      this.setState(key, conflict(certName));
      return;
    }
    if (!live) {
      try {
        await this.opts.client.request('POST', collectionPath(CERTIFICATES_PATH, 'certificates', namespace), {
          body: want,
          signal,
        });
        this.opts.onWrite?.('certificate');
        log.info('signing Certificate created', { certificate: certName, identity: identity.identity });
      } catch (err) {
        if (!isConflict(err) && apiStatusCode(err) !== 409) throw err;
        // It exists: ours (the cache is behind) or someone else's, which is never touched.
        const existing = await this.opts.client.request<CertificateObject>(
          'GET',
          certificatePath(namespace, certName),
          {
            signal,
          },
        );
        if (!ownedBy(existing, card.metadata.uid)) {
          this.setState(key, conflict(certName));
          return;
        }
      }
      this.setState(key, issuanceFromCertificate(want, identity.identity));
      return;
    }
    const drift = certificateDrift(live, want);
    if (drift.length > 0) {
      // A full replace (not an apply): fields set by hand, such as an extra SAN, must go, and
      // server-side apply would keep another manager's fields.
      const body = {
        ...want,
        metadata: {
          ...want.metadata,
          resourceVersion: live.metadata.resourceVersion,
          labels: { ...live.metadata.labels, ...want.metadata.labels },
          ...(live.metadata.annotations ? { annotations: live.metadata.annotations } : {}),
        },
      };
      await this.opts.client.request('PUT', certificatePath(namespace, certName), { body, signal });
      this.opts.onWrite?.('certificate');
      log.info('signing Certificate updated', { certificate: certName, drift: drift.join(', ') });
    }
    this.setState(key, issuanceFromCertificate(live, identity.identity));
  }

  /**
   * The service account of the card's identity (plan.ts serviceAccountOf): the Pod template's of
   * the Deployment or StatefulSet that controls an adopted card, else `default`.
   */
  private async serviceAccount(
    card: CardObject,
    signal: AbortSignal,
  ): Promise<{ ok: true; name: string } | { ok: false; message: string }> {
    const owner = card.metadata.ownerReferences?.find(
      (r) =>
        r.controller && (r.kind === 'Deployment' || r.kind === 'StatefulSet') && r.apiVersion === 'apps/v1',
    );
    if (!owner) return { ok: true, name: serviceAccountOf(undefined) };
    const plural = owner.kind === 'Deployment' ? 'deployments' : 'statefulsets';
    try {
      const workload = await this.opts.client.request<{
        metadata?: { uid?: string };
        spec?: { template?: { spec?: { serviceAccountName?: string } } };
      }>(
        'GET',
        `${collectionPath('/apis/apps/v1', plural, card.metadata.namespace)}/${encodeURIComponent(owner.name)}`,
        {
          signal,
        },
      );
      if (workload.metadata?.uid !== owner.uid)
        return { ok: false, message: `the ${owner.kind} "${owner.name}" that owns the card is gone` };
      return { ok: true, name: serviceAccountOf(workload) };
    } catch (err) {
      if (isNotFound(err))
        return { ok: false, message: `the ${owner.kind} "${owner.name}" that owns the card is gone` };
      const status = apiStatusCode(err);
      if (status === 403)
        return {
          ok: false,
          message: `the operator may not read the ${owner.kind} "${owner.name}" that owns the card, whose service account names the identity (${describeApiError(err)})`,
        };
      throw err;
    }
  }
}

function conflict(certName: string): IssuanceState {
  return {
    sign: false,
    reason: 'CertificateNotRequested',
    message: `a Certificate "${certName}" exists and is not owned by this AgentCard; the operator neither changes it nor signs with its Secret (delete it, or rename the card)`,
  };
}

function certificatePath(namespace: string, name: string): string {
  return `${collectionPath(CERTIFICATES_PATH, 'certificates', namespace)}/${encodeURIComponent(name)}`;
}
