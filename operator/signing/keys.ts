/**
 * Signing keys from Secrets, for every controller that signs (AgentCards and catalogs share the
 * spec.signing shape): each key of the spec read from its Secret (a JWK, a PEM key, or a
 * cert-manager certificate and key), checked, and imported once per version of its material.
 * Any problem stops signing, with a Signed condition that names the Secret and what is wrong
 * (never the material). Pure apart from the key import; the Secrets are read by secrets.ts.
 */
import { createHash } from 'node:crypto';
import { describeError, UserError } from '../errors.ts';
import type { CardSignedReason } from '../api/reasons.ts';
import type { AgentCardSpec, AgentCardStatus, Condition } from '../card/resource.ts';
import { importCertificateSigningKey, importSigningKey, type SigningKey } from '../card/sign.ts';
import { verifySignerIdentity } from './identity.ts';
import type { IssuanceState } from './issuance.ts';

type ConditionStatus = Condition['status'];

/** A Secret as the reconcile sees it: base64 data, and whether it carries the watch label. */
export interface SecretView {
  data: Record<string, string>;
  labelled: boolean;
}

/**
 * The input of a key that names an issuerRef (operator/controllers/issuer/): the Secret cert-manager writes
 * for the card, whether the operator requests certificates at all, and the issuer controller's
 * view of the Certificate (undefined: not reconciled yet).
 */
export interface IssuedKey {
  secretName: string;
  enabled: boolean;
  state?: IssuanceState;
}

/**
 * Imported keys by (digest of the material, kid, alg): importing parses and checks the key each
 * time, which would be most of a reconcile's CPU at scale. A changed Secret has another digest, so
 * a rotation is never served from the cache. Bounded; the oldest entry goes first.
 */
const keyCache = new Map<string, Promise<SigningKey>>();
const KEY_CACHE_SIZE = 256;

function importCached(
  material: string,
  kid: string | undefined,
  alg: string | undefined,
): Promise<SigningKey> {
  const id = `${createHash('sha256').update(material).digest('hex')}\u0000${kid ?? ''}\u0000${alg ?? ''}`;
  let key = keyCache.get(id);
  if (!key) {
    key = importSigningKey(material, { kid, alg });
    keyCache.set(id, key);
    // A failed import is not cached: the error is reported, and the next attempt tries again.
    key.catch(() => keyCache.delete(id));
    if (keyCache.size > KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value as string);
  }
  return key;
}

/** Imported certificate keys, cached like importCached (the checks of `now` are redone by the caller). */
function importCertificateCached(
  material: { certificate: string; privateKey: string; ca?: string },
  kid: string | undefined,
  alg: string | undefined,
  now: Date,
): Promise<SigningKey> {
  const digest = createHash('sha256')
    .update(material.certificate)
    .update('\u0000')
    .update(material.privateKey)
    .update('\u0000')
    .update(material.ca ?? '')
    .digest('hex');
  const id = `x509\u0000${digest}\u0000${kid ?? ''}\u0000${alg ?? ''}`;
  let key = keyCache.get(id);
  if (!key) {
    key = importCertificateSigningKey(material, { kid, alg, now });
    keyCache.set(id, key);
    key.catch(() => keyCache.delete(id));
    if (keyCache.size > KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value as string);
  }
  return key;
}

const TLS_ENTRIES = { certificate: 'tls.crt', privateKey: 'tls.key', ca: 'ca.crt' } as const;

export interface SigningOutcome {
  condition: { status: ConditionStatus; reason: CardSignedReason; message: string };
  keys?: SigningKey[];
}

/**
 * Reads every signing key of the spec; any problem stops signing (and publishing). Also used by
 * the catalog controller, whose spec.signing has the same shape; `subject` names what is signed
 * in the messages.
 */
export async function loadSigningKeys(
  spec: Pick<AgentCardSpec, 'signing'>,
  namespace: string,
  secrets: ReadonlyMap<string, SecretView | undefined>,
  served: string,
  subject: 'card' | 'catalog' = 'card',
  now: Date = new Date(),
  issued?: IssuedKey,
): Promise<SigningOutcome> {
  const signing = spec.signing;
  if (!signing) {
    return {
      condition: {
        status: 'False',
        reason: 'SigningNotConfigured',
        message: `spec.signing is not set: the ${subject} is published unsigned`,
      },
      keys: [],
    };
  }
  const problems: Array<{
    reason:
      | 'SigningKeyNotFound'
      | 'SigningKeyInvalid'
      | 'SigningCertificateInvalid'
      | 'CertificatePending'
      | 'CertificateNotRequested';
    message: string;
  }> = [];
  const keys: SigningKey[] = [];
  for (const [i, ref] of signing.keys.entries()) {
    const where = `spec.signing.keys[${i}]`;
    if (ref.issuerRef) {
      // Never signs with a Secret the operator did not request, and never publishes unsigned
      // meanwhile: the last good card stays served until the issued certificate signs.
      const refused = issuedKeyProblem(ref.issuerRef, where, issued, secrets);
      if (refused) {
        problems.push(refused);
        continue;
      }
      const loaded = await loadCertificateKey(
        ref,
        issued!.secretName,
        where,
        namespace,
        secrets,
        subject,
        now,
      );
      const identity = issued!.state?.identity;
      const carried = 'key' in loaded ? loaded.key.certificate?.identities : undefined;
      if (identity && carried && (carried.length !== 1 || carried[0] !== identity)) {
        problems.push({
          reason: 'CertificatePending',
          message: `${where}: the certificate in Secret "${issued!.secretName}" names ${carried.join(', ') || 'no identity'}, not only the card's identity ${identity}; waiting for cert-manager to issue the Certificate as the operator requested it`,
        });
      } else if ('key' in loaded) keys.push(loaded.key);
      else problems.push(loaded);
      continue;
    }
    if (ref.certificate) {
      const loaded = await loadCertificateKey(
        ref,
        ref.certificate.secretName,
        where,
        namespace,
        secrets,
        subject,
        now,
      );
      if ('key' in loaded) keys.push(loaded.key);
      else problems.push(loaded);
      continue;
    }
    const { name, key } = ref.secretRef!;
    const secret = secrets.get(name);
    if (!secret) {
      problems.push({
        reason: 'SigningKeyNotFound',
        message: `${where}: Secret "${name}" not found in namespace ${namespace}; create it with a private JWK or PKCS#8 PEM under the key "${key}"; the ${subject} is signed as soon as it exists`,
      });
      continue;
    }
    const encoded = secret.data[key];
    if (encoded === undefined) {
      const present = Object.keys(secret.data).sort();
      problems.push({
        reason: 'SigningKeyNotFound',
        message: `${where}: Secret "${name}" has no key "${key}" (its keys: ${present.length ? present.join(', ') : 'none'}); add it or fix spec.signing.keys[${i}].secretRef.key`,
      });
      continue;
    }
    try {
      keys.push(await importCached(Buffer.from(encoded, 'base64').toString('utf8'), ref.kid, ref.alg));
    } catch (err) {
      // The card engine's UserError messages never echo key material; anything else could, so
      // it is replaced by a fixed sentence.
      const why =
        err instanceof UserError
          ? describeError(err)
          : 'it is neither a private JWK nor a PKCS#8 PEM private key';
      problems.push({
        reason: 'SigningKeyInvalid',
        message: `${where}: the key in Secret "${name}" (key "${key}") cannot be used: ${why}`,
      });
    }
  }
  if (problems.length > 0) {
    return {
      condition: {
        status: 'False',
        reason: problems[0]!.reason,
        message: `${problems.map((p) => p.message).join('; ')}; ${served}`,
      },
    };
  }
  return {
    condition: {
      status: 'True',
      reason: 'Signed',
      message: `${subject === 'card' ? '' : `${subject} `}signed with ${keys.map((k) => `${k.kid} (${k.alg})`).join(', ')}`,
    },
    keys,
  };
}

/**
 * Why a key that names an issuerRef cannot sign yet, or undefined when its issued Secret is there
 * to be loaded: the operator does not request certificates, the issuer controller refuses (no
 * cert-manager, a Certificate it does not own, no identity), or cert-manager has not issued it.
 */
function issuedKeyProblem(
  issuerRef: { name: string; kind: string },
  where: string,
  issued: IssuedKey | undefined,
  secrets: ReadonlyMap<string, SecretView | undefined>,
): { reason: 'CertificatePending' | 'CertificateNotRequested'; message: string } | undefined {
  if (!issued?.enabled)
    return {
      reason: 'CertificateNotRequested',
      message: `${where} names ${issuerRef.kind} "${issuerRef.name}", but this operator does not request certificates (start it with --cert-manager; chart value certManager.enabled)`,
    };
  if (issued.state && !issued.state.sign)
    return { reason: issued.state.reason, message: `${where}: ${issued.state.message}` };
  if (secrets.get(issued.secretName) === undefined)
    return {
      reason: 'CertificatePending',
      message: `${where}: ${issued.state?.message ?? `waiting for the Certificate "${issued.secretName}" to be requested from ${issuerRef.kind} "${issuerRef.name}"`}; the card is signed as soon as cert-manager writes Secret "${issued.secretName}"`,
    };
  return undefined;
}

/** One certificate key (spec.signing.keys[i].certificate, or an issued one): the kubernetes.io/tls Secret `name`. */
async function loadCertificateKey(
  ref: NonNullable<AgentCardSpec['signing']>['keys'][number],
  name: string,
  where: string,
  namespace: string,
  secrets: ReadonlyMap<string, SecretView | undefined>,
  subject: 'card' | 'catalog',
  now: Date,
): Promise<
  { key: SigningKey } | { reason: 'SigningKeyNotFound' | 'SigningCertificateInvalid'; message: string }
> {
  const secret = secrets.get(name);
  if (!secret) {
    return {
      reason: 'SigningKeyNotFound',
      message: `${where}: certificate Secret "${name}" not found in namespace ${namespace}; create a kubernetes.io/tls Secret (tls.crt, tls.key, optional ca.crt); the ${subject} is signed as soon as it exists`,
    };
  }
  const missing = [TLS_ENTRIES.certificate, TLS_ENTRIES.privateKey].filter((k) => !secret.data[k]);
  if (missing.length > 0) {
    return {
      reason: 'SigningKeyNotFound',
      message: `${where}: Secret "${name}" has no ${missing.join(' and ')}; a certificate signing key is a kubernetes.io/tls Secret (tls.crt, tls.key, optional ca.crt)`,
    };
  }
  const text = (k: string) => Buffer.from(secret.data[k]!, 'base64').toString('utf8');
  try {
    const key = await importCertificateCached(
      {
        certificate: text(TLS_ENTRIES.certificate),
        privateKey: text(TLS_ENTRIES.privateKey),
        ...(secret.data[TLS_ENTRIES.ca] ? { ca: text(TLS_ENTRIES.ca) } : {}),
      },
      ref.kid,
      ref.alg,
      now,
    );
    // A cached import was checked at another time: its validity is checked again now.
    const facts = key.certificate!;
    if (now.getTime() > Date.parse(facts.notAfter))
      throw new UserError(`the certificate (${facts.subject}) expired at ${facts.notAfter}`);
    if (now.getTime() < Date.parse(facts.notBefore))
      throw new UserError(`the certificate (${facts.subject}) is not valid before ${facts.notBefore}`);
    return { key };
  } catch (err) {
    const why = err instanceof UserError ? describeError(err) : 'it is not a usable certificate and key';
    return {
      reason: 'SigningCertificateInvalid',
      message: `${where}: the certificate in Secret "${name}" cannot be used: ${why}`,
    };
  }
}

/**
 * status.signatures[] of one key: kid, alg and, for a certificate key, its public facts; given
 * `now`, also the identity its chain proves (identity.ts), which the policy controller judges by.
 */
export function signatureStatus(
  k: SigningKey,
  now?: Date,
): NonNullable<AgentCardStatus['signatures']>[number] {
  const proven = k.x5c && now ? verifySignerIdentity(k, now) : undefined;
  return {
    kid: k.kid,
    alg: k.alg,
    ...(k.certificate
      ? {
          certificate: {
            subject: k.certificate.subject,
            issuer: k.certificate.issuer,
            identities: [...k.certificate.identities],
            ...(proven && 'identity' in proven ? { verifiedIdentity: proven.identity } : {}),
            notAfter: k.certificate.notAfter.replace(/\.\d{3}Z$/, 'Z'),
          },
        }
      : {}),
  };
}
