/**
 * Signing (A2A spec section 8.4.2): the payload is the RFC 8785 canonical JSON of the card
 * without `signatures`; each key adds one JWS (RFC 7515) with a detached payload, whose protected
 * header is `{alg, jku?, kid, typ: "JOSE", x5c?}` (members in canonical order, so the header bytes
 * are reproducible). Keys are a private JWK or a PEM private key (PKCS#8; SEC1 and PKCS#1 also
 * work), or a certificate and its key (certificate.ts), whose chain goes in `x5c` (RFC 7515
 * section 4.1.6) next to the `kid`.
 *
 * Error messages name the problem but never carry key material.
 */
import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { inspect } from 'node:util';
import * as jose from 'jose';
import { UserError } from '../errors.ts';
import { checkCertificateKey, type CertificateFacts } from './certificate.ts';
import { signingPayload } from './jcs.ts';
import { SIGNING_ALGS, type SigningAlg } from './resource.ts';

export type JWK = jose.JWK;
export type { SigningAlg } from './resource.ts';

/** An imported signing key. Only public facts are properties; the private key stays hidden. */
export type SigningKey = {
  readonly kid: string;
  readonly alg: SigningAlg;
  /** The public JWK, with kid, alg and use "sig". */
  readonly publicJwk: JWK;
  /** A certificate key: the chain put in the JWS header (base64 DER, leaf first, no root). */
  readonly x5c?: readonly string[];
  /** A certificate key: the leaf certificate's public facts. */
  readonly certificate?: Readonly<CertificateFacts>;
  /** A certificate key: its Secret's `ca.crt` certificates (base64 DER), the chain's trust anchors. */
  readonly anchors?: readonly string[];
};

const privateKeys = new WeakMap<SigningKey, jose.CryptoKey>();

/** The key type each algorithm needs (RFC 7518 section 3, RFC 8037). */
const KEY_TYPE_FOR_ALG: Record<SigningAlg, string> = {
  ES256: 'EC P-256',
  ES384: 'EC P-384',
  EdDSA: 'Ed25519',
  RS256: 'RSA',
  PS256: 'RSA',
};

function describeKeyType(key: KeyObject): string {
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      return curve === 'prime256v1'
        ? 'EC P-256'
        : curve === 'secp384r1'
          ? 'EC P-384'
          : `EC ${curve ?? 'unknown curve'}`;
    }
    case 'ed25519':
      return 'Ed25519';
    case 'rsa':
      return 'RSA';
    default:
      return key.asymmetricKeyType ?? 'unknown';
  }
}

const DEFAULT_ALG: Record<string, SigningAlg> = {
  'EC P-256': 'ES256',
  'EC P-384': 'ES384',
  Ed25519: 'EdDSA',
  RSA: 'RS256',
};

function isAlg(value: unknown): value is SigningAlg {
  return typeof value === 'string' && (SIGNING_ALGS as readonly string[]).includes(value);
}

/** Parses key material (a private JWK or a PEM private key) into a private KeyObject. */
function parsePrivateKey(material: string): { key: KeyObject; jwk?: JWK } {
  const text = material.trim();
  if (text.startsWith('{')) {
    let jwk: unknown;
    try {
      jwk = JSON.parse(text);
    } catch {
      // JSON.parse messages quote the input: never show them, it is key material.
      throw new UserError('the key is not valid JSON (expected a private JWK or a PEM private key)');
    }
    if (!jwk || typeof jwk !== 'object' || Array.isArray(jwk))
      throw new UserError('the key is not a JWK object');
    const obj = jwk as Record<string, unknown>;
    if (Array.isArray(obj.keys))
      throw new UserError('the key is a JWKS (a key set); give a single private JWK');
    if (typeof obj.kty !== 'string') throw new UserError('the JWK has no "kty"');
    if (obj.kty === 'oct')
      throw new UserError('the JWK is a symmetric (oct) key; an asymmetric private key is needed');
    if (obj.d === undefined)
      throw new UserError('the JWK is a public key; signing needs the private key (with "d")');
    try {
      return { key: createPrivateKey({ key: obj as JsonWebKey, format: 'jwk' }), jwk: obj as JWK };
    } catch (err) {
      throw new UserError(`the JWK is not a usable ${obj.kty} private key (${cryptoReason(err)})`);
    }
  }
  if (text.includes('-----BEGIN')) {
    if (/-----BEGIN (PUBLIC KEY|RSA PUBLIC KEY|CERTIFICATE)-----/.test(text)) {
      throw new UserError('the PEM holds a public key or certificate; signing needs the private key');
    }
    if (text.includes('-----BEGIN ENCRYPTED PRIVATE KEY-----')) {
      throw new UserError('the PEM private key is encrypted; give an unencrypted PKCS#8 key');
    }
    if (!/-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/.test(text))
      throw new UserError('the PEM does not hold a private key');
    try {
      return { key: createPrivateKey({ key: text, format: 'pem' }) };
    } catch (err) {
      throw new UserError(`the PEM private key cannot be read (${cryptoReason(err)})`);
    }
  }
  throw new UserError('the key is neither a private JWK (JSON) nor a PEM private key');
}

/** A short reason from a crypto error; these messages describe the failure, not the key. */
function cryptoReason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message
    .split('\n', 1)[0]!
    .replace(/^error:[0-9A-F]+:/, '')
    .slice(0, 120);
}

/**
 * Imports a private signing key. The algorithm comes from `opts.alg`, else the JWK's "alg",
 * else the key type (P-256: ES256, P-384: ES384, Ed25519: EdDSA, RSA: RS256); it must match the
 * key type. The kid comes from `opts.kid`, else the JWK's "kid", else the RFC 7638 thumbprint.
 */
export async function importSigningKey(
  material: string,
  opts: { kid?: string; alg?: string } = {},
): Promise<SigningKey> {
  return importKey(material, opts);
}

/**
 * Imports a certificate signing key (a `kubernetes.io/tls` Secret's `tls.crt`, `tls.key` and
 * optional `ca.crt`): the key is checked against its certificate, the chain and the key usage
 * (certificate.ts), and each signature then carries the chain as `x5c`. kid and alg as for
 * importSigningKey (the kid defaults to the key's RFC 7638 thumbprint).
 */
export async function importCertificateSigningKey(
  material: { certificate: string; privateKey: string; ca?: string },
  opts: { kid?: string; alg?: string; now?: Date } = {},
): Promise<SigningKey> {
  const checked = checkCertificateKey(material, opts.now ?? new Date());
  const pem = checked.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  return importKey(pem, opts, { x5c: checked.x5c, certificate: checked.facts, anchors: checked.anchors });
}

async function importKey(
  material: string,
  opts: { kid?: string; alg?: string },
  cert?: { x5c: string[]; certificate: CertificateFacts; anchors: string[] },
): Promise<SigningKey> {
  if (typeof material !== 'string' || material.trim() === '') throw new UserError('the key is empty');
  const { key, jwk } = parsePrivateKey(material);
  const keyType = describeKeyType(key);
  if (!DEFAULT_ALG[keyType]) {
    throw new UserError(`unsupported key type ${keyType} (supported: EC P-256, EC P-384, Ed25519, RSA)`);
  }
  if (opts.alg !== undefined && !isAlg(opts.alg)) {
    throw new UserError(`unsupported alg "${opts.alg}" (supported: ${SIGNING_ALGS.join(', ')})`);
  }
  if (jwk?.alg !== undefined && opts.alg !== undefined && jwk.alg !== opts.alg) {
    throw new UserError(`the JWK says alg ${jwk.alg} but alg ${opts.alg} was asked for`);
  }
  const requested = opts.alg ?? jwk?.alg;
  if (requested !== undefined && !isAlg(requested)) {
    throw new UserError(`unsupported alg "${requested}" in the JWK (supported: ${SIGNING_ALGS.join(', ')})`);
  }
  const alg: SigningAlg = requested ?? DEFAULT_ALG[keyType]!;
  if (KEY_TYPE_FOR_ALG[alg] !== keyType) {
    throw new UserError(`alg ${alg} needs an ${KEY_TYPE_FOR_ALG[alg]} key, but the key is ${keyType}`);
  }
  if (keyType === 'RSA' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    throw new UserError('the RSA key is shorter than 2048 bits');
  }

  const { kty, crv, x, y, n, e } = createPublicKey(key).export({ format: 'jwk' });
  const publicParts = Object.fromEntries(
    Object.entries({ kty, crv, x, y, n, e }).filter(([, v]) => v !== undefined),
  );
  const kid =
    opts.kid ??
    (typeof jwk?.kid === 'string' && jwk.kid ? jwk.kid : undefined) ??
    (await jose.calculateJwkThumbprint(publicParts));
  const cryptoKey = (await jose.importJWK(key.export({ format: 'jwk' }) as JWK, alg)) as jose.CryptoKey;

  const signingKey: SigningKey = Object.freeze({
    kid,
    alg,
    publicJwk: Object.freeze({ ...publicParts, kid, alg, use: 'sig' }),
    ...(cert
      ? {
          x5c: Object.freeze([...cert.x5c]),
          certificate: Object.freeze({ ...cert.certificate, identities: [...cert.certificate.identities] }),
          anchors: Object.freeze([...cert.anchors]),
        }
      : {}),
    toJSON: () => ({ kid, alg, ...(cert ? { certificate: cert.certificate.subject } : {}) }),
    [inspect.custom]: () =>
      `SigningKey { kid: ${JSON.stringify(kid)}, alg: ${alg}${cert ? `, certificate: ${JSON.stringify(cert.certificate.subject)}` : ''} }`,
  });
  privateKeys.set(signingKey, cryptoKey);
  return signingKey;
}

const encoder = new TextEncoder();

/** The protected header of a signature; members in canonical (sorted) order. */
export function protectedHeader(key: SigningKey, jku?: string): jose.JWSHeaderParameters {
  return {
    alg: key.alg,
    ...(jku === undefined ? {} : { jku }),
    kid: key.kid,
    typ: 'JOSE',
    ...(key.x5c ? { x5c: [...key.x5c] } : {}),
  };
}

/**
 * Signs a rendered card with each key in order and returns a copy with `signatures` (existing
 * signatures are replaced). `opts.jku` (an https URL of the JWKS) goes in every header.
 */
export async function signCard(
  rendered: Record<string, unknown>,
  keys: readonly SigningKey[],
  opts: { jku?: string } = {},
): Promise<Record<string, unknown>> {
  if (opts.jku !== undefined && !/^https:\/\/[^\s]+$/.test(opts.jku))
    throw new UserError('jku must be an https URL');
  const { signatures: _old, ...card } = rendered;
  const payload = signingPayload(card);
  // All keys at once (WebCrypto signs on libuv's thread pool); the order of `keys` is kept.
  const signatures = await Promise.all(keys.map((key) => signDetached(payload, key, opts.jku)));
  return keys.length === 0 ? card : { ...card, signatures };
}

/** A JWS with a detached payload (RFC 7515 appendix F): the protected header and the signature. */
export type DetachedSignature = { protected: string; signature: string };

/**
 * Signs a payload (canonical JSON text, see jcs.ts) with one key and returns the JWS without its
 * payload. Cards and AI Catalogs share it: only where the payload comes from differs.
 */
export async function signDetached(
  payload: string,
  key: SigningKey,
  jku?: string,
): Promise<DetachedSignature> {
  const privateKey = privateKeys.get(key);
  if (!privateKey) throw new UserError(`signing key ${key.kid} was not imported with importSigningKey`);
  const jws = await new jose.FlattenedSign(encoder.encode(payload))
    .setProtectedHeader(protectedHeader(key, jku))
    .sign(privateKey);
  return { protected: jws.protected!, signature: jws.signature };
}

/**
 * The public JWKS of the keys: `{keys: [{..., kid, alg, use: "sig"}]}`. Each entry is the key's
 * own frozen JWK, not a copy: the verifier remembers its imported keys per JWK object
 * (verify.ts), so checking the published signatures again at every resync imports each key once
 * rather than once per card.
 */
export function publicJwks(keys: readonly SigningKey[]): { keys: JWK[] } {
  return { keys: keys.map((k) => k.publicJwk) };
}
