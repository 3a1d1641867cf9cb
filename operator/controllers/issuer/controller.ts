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
 * again, through a channel (runtime/channel.ts), when that changes: the AgentCard's status has
 * one writer.
 *
 * When the cert-manager CRDs are not installed, it does not stop the process (every other part of
 * the operator keeps working): cards that name an issuer say so in their Signed condition, and the
 * cache looks for the CRD again every 30 s (runtime/cache.ts), then every card is queued again.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { KIND, signingCertificateName } from '../../api/names.ts';
import { collectionPath } from '../../kube/api.ts';
import type { KubeClient } from '../../kube/client.ts';
import { apiStatusCode, describeApiError, isConflict, isNotFound } from '../../kube/errors.ts';
import type { Logger } from '../../log.ts';
import { ControllerBuilder, type BuiltController, type Runtime } from '../../runtime/builder.ts';
import type { Cache, SharedInformer } from '../../runtime/cache.ts';
import type { Channel } from '../../runtime/channel.ts';
import { objectKey, splitKey } from '../../runtime/keys.ts';
import type { Runnable } from '../../runtime/manager.ts';
import { LOOK_AGAIN_MS } from '../../runtime/cache.ts';
import type { HandlerResult, WorkQueue } from '../../runtime/workqueue.ts';
import { Writer } from '../../runtime/writes.ts';
import type { IssuanceState } from '../../signing/issuance.ts';
import { AGENT_CARDS, OWNED_CERTIFICATES, type CachedAgentCard } from '../cache/collections.ts';
import { CONTROLLER_NAMES } from '../metrics.ts';
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

export interface IssuerControllerOptions {
  client: KubeClient;
  log: Logger;
  /** The manager's cache (runtime/cache.ts) and what every controller shares. */
  cache: Cache;
  runtime: Runtime;
  policy: IdentityPolicy;
  resyncMs: number;
  /** Where it says that what a card's signing depends on changed: the card controller re-plans it. */
  cardWake: Channel;
  onWrite?: (resource: string) => void;
}

type CardObject = KubernetesObject & {
  metadata: { name: string; namespace: string; uid: string; ownerReferences?: OwnerRef[] };
  spec?: unknown;
};
type OwnerRef = { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean };
type CachedCertificate = CertificateObject & KubernetesObject;

export class IssuerController {
  readonly queue: WorkQueue;
  private readonly opts: IssuerControllerOptions;
  private readonly log: Logger;
  private readonly cards: SharedInformer<CachedAgentCard>;
  /** The owned Certificates; empty while cert-manager's CRDs are not served (looked for again). */
  private readonly certificates: SharedInformer<CachedCertificate>;
  private readonly writer: Writer<CachedCertificate>;
  private readonly built: BuiltController;
  /** card key → what the card controller is told. */
  private readonly states = new Map<string, IssuanceState>();

  constructor(opts: IssuerControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'issuer' });
    this.writer = new Writer({ client: opts.client, onWrite: (resource) => opts.onWrite?.(resource) });
    this.cards = opts.cache.informer(AGENT_CARDS);
    this.certificates = opts.cache.informer<CachedCertificate>(OWNED_CERTIFICATES);
    this.built = new ControllerBuilder(
      { ...opts.runtime, log: this.log },
      {
        name: CONTROLLER_NAMES.issuer,
        concurrency: 2,
        resyncMs: opts.resyncMs,
        failure: 'requesting the signing certificate failed; retrying',
        fields: (key) => ({ agentCard: key }),
      },
    )
      .watches(this.cards, (c) => [objectKey(c.metadata.namespace, c.metadata.name)])
      .owns(this.certificates, {
        kinds: [KIND],
        key: (owner, cert) => objectKey(cert.metadata.namespace, owner),
      })
      .complete(this);
    this.queue = this.built.queue;
  }

  /** What the card controller's signing key resolution is told about a card (undefined: nothing yet). */
  issuance(cardKey: string): IssuanceState | undefined {
    return this.states.get(cardKey);
  }

  unsynced(): string[] {
    return this.built.unsynced();
  }

  runnables(): Runnable[] {
    return this.built.runnables();
  }

  /** Every card that names an issuer, and every card an owned Certificate points to. */
  *keys(): Iterable<{ key: string }> {
    const keys = new Set<string>();
    for (const c of this.cards.list())
      if (issuerRefOf(c.spec) || this.states.has(objectKey(c.metadata.namespace, c.metadata.name)))
        keys.add(objectKey(c.metadata.namespace, c.metadata.name));
    for (const cert of this.certificates.list()) {
      const owner = cert.metadata.ownerReferences?.find((r) => r.controller && r.kind === KIND);
      if (owner) keys.add(objectKey(cert.metadata.namespace, owner.name));
    }
    for (const key of keys) yield { key };
  }

  started(lanes: { high: number; low: number }): void {
    if (!this.certificates.available)
      this.log.warn(
        'cert-manager Certificates are not served; cards that name an issuerRef are not signed until they are',
        {},
      );
    this.log.info('caches synced; requesting signing certificates', { agentCards: lanes.high + lanes.low });
  }

  private setState(key: string, state: IssuanceState | undefined): void {
    const before = this.states.get(key);
    if (JSON.stringify(before) === JSON.stringify(state)) return;
    if (state) this.states.set(key, state);
    else this.states.delete(key);
    this.opts.cardWake.send(key);
  }

  async reconcile(key: string, signal: AbortSignal): Promise<HandlerResult> {
    const [namespace, name] = splitKey(key);
    const card = this.cards.get(name, namespace) as CardObject | undefined;
    const certName = signingCertificateName(name);
    const live = this.certificates.get(certName, namespace);
    const issuerRef = card && !card.metadata.deletionTimestamp ? issuerRefOf(card.spec) : undefined;
    const log = this.log.child({ agentCard: key });

    if (!card || !issuerRef) {
      this.setState(key, undefined);
      // The card is gone (the garbage collector deletes the Certificate), or no longer names an
      // issuer: a Certificate it owns goes now.
      if (!card || !live || !ownedBy(live, card.metadata.uid)) return;
      if (
        await this.writer.deleteOwned(
          'certificate',
          certificatePath(namespace, certName),
          live.metadata.uid!,
          signal,
        )
      )
        log.info('signing Certificate deleted: the card names no issuer', { certificate: certName });
      return;
    }

    if (!this.certificates.available) {
      this.setState(key, {
        sign: false,
        reason: 'CertificateNotRequested',
        message: `spec.signing names ${issuerRef.kind} "${issuerRef.name}", but cert-manager's Certificate API is not served in this cluster (install cert-manager, then the certificate is requested within ${LOOK_AGAIN_MS / 1000} s)`,
      });
      return;
    }

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
        await this.writer.create(
          'certificate',
          collectionPath(CERTIFICATES_PATH, 'certificates', namespace),
          want,
          signal,
        );
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
      await this.writer.replace('certificate', certificatePath(namespace, certName), body, signal);
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
