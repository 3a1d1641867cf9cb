/**
 * One HTTP request for the JSONRPC and HTTP+JSON bindings, over undici (HTTP/1.1, or HTTP/2 when
 * a TLS server offers it by ALPN). A fresh connection per probe, opened by openConnection so the
 * address policy sees the address actually used; no redirects; the body is read up to a cap and
 * then dropped, never logged.
 */
import type { Readable } from 'node:stream';
import { Client } from 'undici';
import type { ProbePlan } from './calls.ts';
import type { Observation } from './classify.ts';
import { type CaOption, type ConnectOptions, ProbeFailure, abortCode, openConnection } from './connect.ts';

type HttpPlan = Extract<ProbePlan, { transport: 'http' }>;

export interface ExchangeResult {
  observation: Observation;
  /** notAfter of the peer certificate, when a TLS handshake got that far. */
  tlsNotAfter?: string;
  /** When the connection was ready (performance.now()), to time the request phase. */
  readyAt?: number;
  /** Something the verdict's message should mention (e.g. credentials withheld). */
  note?: string;
}

export type ExchangeOptions = Omit<ConnectOptions, 'tls'> & {
  ca?: CaOption;
  /** Caller headers (credentials), sent only to this interface's origin. */
  headers: Record<string, string>;
  bodyLimit: number;
  /** performance.now() value of the probe's deadline. */
  deadlineAt: number;
};

export const USER_AGENT = 'agentcard-probe/1';

/**
 * What a probe's undici Client is destroyed with once the exchange is over. Destroyed without a
 * reason, undici builds a ClientDestroyedError each time and Node's stream destroy formats its
 * stack: at hundreds of probes a second that was about 5% of the prober's CPU. This one is built
 * once, its stack formatted once; nothing is waiting on the client by then, so nobody sees it.
 */
const EXCHANGE_OVER = Object.assign(new Error('the probe exchange is over'), { code: 'UND_ERR_DESTROYED' });
void EXCHANGE_OVER.stack;

/** Reads at most `limit` bytes of a body stream; stops (and destroys it) past the cap. */
export async function readCapped(
  body: Readable,
  limit: number,
): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    const room = limit - size;
    if (chunk.length > room) {
      chunks.push(chunk.subarray(0, room));
      body.destroy();
      return { text: Buffer.concat(chunks).toString('utf8'), truncated: true };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated: false };
}

export function hostForUrl(hostname: string): string {
  return hostname.includes(':') ? `[${hostname}]` : hostname;
}

export async function httpExchange(plan: HttpPlan, opts: ExchangeOptions): Promise<ExchangeResult> {
  const { endpoint } = plan;
  const secure = endpoint.scheme === 'https';
  const origin = `${secure ? 'https' : 'http'}://${hostForUrl(endpoint.hostname)}:${endpoint.port}`;
  const out: ExchangeResult = { observation: { kind: 'failure', code: 'ECONNREFUSED' } };
  const client = new Client(origin, {
    allowH2: secure,
    pipelining: 1,
    keepAliveTimeout: 1,
    // The probe's own deadline (opts.signal) bounds everything; these are backstops.
    headersTimeout: 0,
    bodyTimeout: 0,
    maxHeaderSize: 16 * 1024,
    connect: (_o, callback) => {
      openConnection(endpoint, {
        ...opts,
        tls: secure ? { alpn: ['h2', 'http/1.1'], ca: opts.ca } : undefined,
      }).then(
        (connection) => {
          out.tlsNotAfter = connection.tlsNotAfter;
          out.readyAt = performance.now();
          callback(null, connection.socket);
        },
        (err: Error) => callback(err, null),
      );
    },
  });
  try {
    const response = await client.request({
      method: plan.method,
      path: plan.path,
      // Caller headers (credentials) first: they cannot replace the protocol's own headers.
      headers: { 'user-agent': USER_AGENT, ...opts.headers, ...plan.headers },
      body: plan.body,
      signal: opts.signal,
    });
    const { text, truncated } = await readCapped(response.body, opts.bodyLimit);
    const contentType = response.headers['content-type'];
    out.observation = {
      kind: 'http',
      status: response.statusCode,
      contentType: Array.isArray(contentType) ? contentType[0] : contentType,
      body: text,
      truncated,
    };
  } catch (err) {
    out.observation = failureObservation(err, opts.signal);
    if (err instanceof ProbeFailure && err.tlsNotAfter) out.tlsNotAfter = err.tlsNotAfter;
  } finally {
    client.destroy(EXCHANGE_OVER).catch(() => {});
  }
  return out;
}

/** Turns whatever a request threw into a failure observation. */
export function failureObservation(err: unknown, signal: AbortSignal): Observation {
  if (err instanceof ProbeFailure) return { kind: 'failure', code: err.code, detail: err.detail };
  if (signal.aborted) return { kind: 'failure', code: abortCode(signal) };
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string') return { kind: 'failure', code };
  // undici's HTTP/1.1 parser errors may come without a code.
  return {
    kind: 'failure',
    code: (err as Error)?.name === 'HTTPParserError' ? 'HPE_INVALID_RESPONSE' : 'UNKNOWN',
  };
}
