/**
 * Opens the probe's connection: resolve the name, check every resolved address against the
 * address policy, connect to an allowed one, and (for TLS) handshake and verify. The address
 * that is checked is the address that is connected to: the socket is opened to the IP literal
 * the policy approved, never to the name, so there is no window for DNS to answer differently.
 */
import dns from 'node:dns';
import net from 'node:net';
import tls from 'node:tls';
import { PROBE_CODES } from './classify.ts';
import { deadline } from './deadline.ts';
import type { OwnerCheck } from './ownership.ts';
import type { AddressPolicy, AddressVerdict } from './policy.ts';
import type { ProbePhases } from './types.ts';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Name resolution, injectable so that tests can make a name resolve anywhere. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (getaddrinfo: /etc/hosts and the cluster DNS), in the order it answers. */
export const systemResolver: Resolver = (hostname) =>
  dns.promises.lookup(hostname, { all: true, order: 'verbatim' });

/** An error with a code the classifier knows, plus what was learnt before it happened. */
export class ProbeFailure extends Error {
  override name = 'ProbeFailure';
  readonly code: string;
  readonly detail?: string;
  tlsNotAfter?: string;
  constructor(code: string, detail?: string, tlsNotAfter?: string) {
    super(detail ? `${code}: ${detail}` : code);
    this.code = code;
    this.detail = detail;
    this.tlsNotAfter = tlsNotAfter;
  }
}

/** Extra trusted CA certificates (PEM), on top of Node's defaults and NODE_EXTRA_CA_CERTS. */
export type CaOption = string | Buffer | (string | Buffer)[];

const contexts = new Map<CaOption, tls.SecureContext>();

/**
 * A TLS context trusting `ca` together with the default roots. Node's `ca` option alone would
 * replace the default roots (https://nodejs.org/api/tls.html#tlscreatesecurecontextoptions),
 * so a private CA would make every public certificate fail. Built once per bundle: a context
 * with some 150 roots is costly to build for each probe.
 */
export function secureContextFor(ca: CaOption): tls.SecureContext {
  let context = contexts.get(ca);
  if (!context) {
    const extra = Array.isArray(ca) ? ca : [ca];
    context = tls.createSecureContext({ ca: [...tls.getCACertificates('default'), ...extra] });
    if (contexts.size >= 16) contexts.clear(); // Bundles are process settings: a handful at most.
    contexts.set(ca, context);
  }
  return context;
}

export interface ConnectOptions {
  policy: AddressPolicy;
  /**
   * The namespace rule: asked about a resolved address that the policy refuses only as private
   * or reserved (never loopback, link-local or metadata); an owned address is allowed.
   */
  owner?: OwnerCheck;
  resolver?: Resolver;
  /** Deadline for TCP connect plus TLS handshake. */
  connectTimeoutMs: number;
  /** The probe's overall deadline / cancellation. */
  signal: AbortSignal;
  /** Present for TLS connections. */
  tls?: { alpn: string[]; ca?: CaOption };
  /** Filled in as the phases complete. */
  phases: ProbePhases;
}

export interface Connection {
  socket: net.Socket;
  /** The IP address connected to (the one the policy approved). */
  address: string;
  tlsNotAfter?: string;
  alpnProtocol?: string | false | null;
}

/** The code of whatever aborted `signal`: the deadline, or the caller's cancellation. */
export function abortCode(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof ProbeFailure) return reason.code;
  return reason instanceof DOMException && reason.name === 'TimeoutError'
    ? PROBE_CODES.timeout
    : PROBE_CODES.cancelled;
}

/** Settles with `promise`, or rejects as soon as `signal` aborts (running `cleanup`). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal, cleanup?: () => void): Promise<T> {
  if (signal.aborted) {
    cleanup?.();
    return Promise.reject(new ProbeFailure(abortCode(signal)));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      cleanup?.();
      reject(new ProbeFailure(abortCode(signal)));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

const elapsed = (start: number) => Math.round((performance.now() - start) * 100) / 100;

async function resolve(hostname: string, opts: ConnectOptions): Promise<ResolvedAddress[]> {
  const family = net.isIP(hostname);
  if (family) return [{ address: hostname, family }];
  const start = performance.now();
  try {
    const addresses = await raceAbort((opts.resolver ?? systemResolver)(hostname), opts.signal);
    if (addresses.length === 0) throw new ProbeFailure(PROBE_CODES.noAddress, hostname);
    return addresses;
  } catch (err) {
    if (err instanceof ProbeFailure) throw err;
    const code = (err as { code?: unknown }).code;
    throw new ProbeFailure(typeof code === 'string' ? code : 'ENOTFOUND', hostname);
  } finally {
    opts.phases.dnsMs = elapsed(start);
  }
}

function tcpConnect(address: string, port: number, signal: AbortSignal): Promise<net.Socket> {
  const socket = net.connect({ host: address, port, noDelay: true });
  return raceAbort(
    new Promise<net.Socket>((resolve, reject) => {
      socket.once('connect', () => {
        socket.removeAllListeners('error');
        resolve(socket);
      });
      socket.once('error', (err: NodeJS.ErrnoException) =>
        reject(new ProbeFailure(err.code ?? 'ECONNREFUSED')),
      );
    }),
    signal,
    () => socket.destroy(),
  );
}

function tlsHandshake(
  socket: net.Socket,
  hostname: string,
  opts: NonNullable<ConnectOptions['tls']>,
  signal: AbortSignal,
): Promise<{ socket: tls.TLSSocket; tlsNotAfter?: string }> {
  // Verification is done here rather than by rejectUnauthorized so that the certificate's
  // notAfter is known even when it fails (an expired certificate reports when it expired).
  // `host` is what checkServerIdentity compares with (an IP literal against IP SANs); SNI
  // cannot carry an IP address (RFC 6066 section 3).
  const secure = tls.connect({
    socket,
    host: hostname,
    servername: net.isIP(hostname) ? undefined : hostname,
    ALPNProtocols: opts.alpn,
    ...(opts.ca ? { secureContext: secureContextFor(opts.ca) } : {}),
    rejectUnauthorized: false,
  });
  return raceAbort(
    new Promise((resolve, reject) => {
      secure.once('secureConnect', () => {
        secure.removeAllListeners('error');
        const cert = secure.getPeerCertificate();
        const notAfter = cert?.valid_to ? new Date(cert.valid_to) : undefined;
        const tlsNotAfter =
          notAfter && !Number.isNaN(notAfter.getTime()) ? notAfter.toISOString() : undefined;
        if (!secure.authorized) {
          secure.destroy();
          const code = String(secure.authorizationError ?? 'ERR_TLS_CERT_UNVERIFIED');
          reject(new ProbeFailure(code, undefined, tlsNotAfter));
          return;
        }
        resolve({ socket: secure, tlsNotAfter });
      });
      secure.once('error', (err: NodeJS.ErrnoException) => {
        secure.destroy();
        reject(new ProbeFailure(err.code ?? 'EPROTO'));
      });
    }),
    signal,
    () => secure.destroy(),
  );
}

/**
 * The verdict on one resolved address: the policy's, and for an address it refuses only as
 * private or reserved, the namespace rule's. The message of a refusal names the rule and the
 * setting that lifts it.
 */
export async function judgeAddress(
  address: string,
  opts: Pick<ConnectOptions, 'policy' | 'owner' | 'signal'>,
): Promise<AddressVerdict> {
  const verdict = opts.policy.check(address);
  if (verdict.allowed || !verdict.namespaceLiftable || !opts.owner) return verdict;
  const ownership = await raceAbort(opts.owner(address, opts.signal), opts.signal);
  if (ownership.owned) return { allowed: true };
  return {
    ...verdict,
    message: `${verdict.message}, and ${ownership.why} (addresses of the AgentCard's own namespace's Pods and selector Services are allowed)`,
  };
}

/** Resolves, checks, connects and (for TLS) verifies. Rejects with a ProbeFailure. */
export async function openConnection(
  endpoint: { hostname: string; port: number },
  opts: ConnectOptions,
): Promise<Connection> {
  const { hostname, port } = endpoint;
  const addresses = await resolve(hostname, opts);
  const verdicts = await Promise.all(
    addresses.map(async (a) => ({ ...a, verdict: await judgeAddress(a.address, opts) })),
  );
  const allowed = verdicts.filter((v) => v.verdict.allowed);
  if (allowed.length === 0) {
    const first = verdicts[0]!.verdict;
    const why = first.allowed ? '' : first.message;
    throw new ProbeFailure(PROBE_CODES.blocked, net.isIP(hostname) ? why : `${hostname} resolves to ${why}`);
  }
  // The probe's deadline, or the connect deadline with its own code, whichever comes first.
  const connectSignal = deadline(
    opts.connectTimeoutMs,
    () => new ProbeFailure(PROBE_CODES.connectTimeout),
    opts.signal,
  );
  try {
    let lastError: unknown;
    for (const candidate of allowed) {
      const start = performance.now();
      let socket: net.Socket;
      try {
        socket = await tcpConnect(candidate.address, port, connectSignal.signal);
      } catch (err) {
        lastError = err;
        if (connectSignal.signal.aborted) break;
        continue; // Try the next allowed address of the name.
      } finally {
        opts.phases.connectMs = elapsed(start);
      }
      if (!opts.tls) return { socket, address: candidate.address };
      const tlsStart = performance.now();
      try {
        const secured = await tlsHandshake(socket, hostname, opts.tls, connectSignal.signal);
        return {
          socket: secured.socket,
          address: candidate.address,
          tlsNotAfter: secured.tlsNotAfter,
          alpnProtocol: secured.socket.alpnProtocol,
        };
      } finally {
        opts.phases.tlsMs = elapsed(tlsStart);
      }
    }
    throw lastError;
  } finally {
    connectSignal.done();
  }
}
