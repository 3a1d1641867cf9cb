/**
 * One HTTP request for the JSONRPC and HTTP+JSON bindings, over undici (HTTP/1.1, or HTTP/2 when
 * a TLS server offers it by ALPN). Connections are opened by openConnection so the address policy
 * sees the address actually used: one per probe, or one per round and origin shared by the
 * round's probes of that origin (RoundConnection). No redirects; the body is read up to a cap and
 * then dropped, never logged.
 */
import type { Readable } from 'node:stream';
import { Client } from 'undici';
import { type Endpoint, type ProbePlan, endpointOrigin } from './calls.ts';
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

/** One exchange on a client: what its connect needs, and where it writes what it learnt. */
interface InFlight {
  endpoint: Endpoint;
  opts: ExchangeOptions;
  out: ExchangeResult;
}

/**
 * An undici Client for one origin whose connections come from openConnection, for the exchange
 * `inFlight()` returns at the time it connects (its deadline, its phases, its result).
 */
function probeClient(endpoint: Endpoint, keepAliveMs: number, inFlight: () => InFlight): Client {
  const secure = endpoint.scheme === 'https';
  return new Client(endpointOrigin(endpoint), {
    allowH2: secure,
    pipelining: 1,
    keepAliveTimeout: keepAliveMs,
    // The probe's own deadline (opts.signal) bounds everything; these are backstops.
    headersTimeout: 0,
    bodyTimeout: 0,
    maxHeaderSize: 16 * 1024,
    connect: (_o, callback) => {
      const { opts, out } = inFlight();
      out.tlsNotAfter = undefined; // A new connection: whatever the last one's certificate said is gone.
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
}

/**
 * How long a round's connection may sit idle between two of its probes (which follow each other
 * at once) when the server gives no Keep-Alive hint; the round closes it anyway when it ends.
 */
const ROUND_KEEP_ALIVE_MS = 4_000;

/**
 * The connection that the HTTP probes of one round share when their interfaces have one origin
 * (`httpOrigin`): the first probe opens it through openConnection, like any probe, and the next
 * uses it if it is still open. If it is not (the server said `Connection: close`, reset it, or a
 * probe gave up on it), the next probe opens its own, again through openConnection. `close()`
 * when the round is over: no connection outlives its round, so every round opens a new
 * connection to every origin it asks, and a server that stopped accepting new connections fails
 * the next round whatever connections it still keeps open.
 */
export class RoundConnection {
  #client?: Client;
  #origin?: string;
  #inFlight?: InFlight;
  /** The notAfter of the open connection's certificate, for the probes that reuse it. */
  #tlsNotAfter?: string;

  /** The shared client, with `inFlight` as the exchange a new connection would be opened for. */
  use(inFlight: InFlight): Client {
    const origin = endpointOrigin(inFlight.endpoint);
    if (this.#origin !== undefined && this.#origin !== origin) {
      throw new Error(`a round connection to ${this.#origin} cannot carry a probe of ${origin}`);
    }
    this.#origin = origin;
    this.#inFlight = inFlight;
    inFlight.out.tlsNotAfter = this.#tlsNotAfter;
    this.#client ??= probeClient(inFlight.endpoint, ROUND_KEEP_ALIVE_MS, () => this.#inFlight!);
    return this.#client;
  }

  /** After an exchange: remember its connection's certificate for the next probe. */
  settle(out: ExchangeResult): void {
    this.#tlsNotAfter = out.tlsNotAfter;
    this.#inFlight = undefined;
  }

  close(): void {
    this.#client?.destroy(EXCHANGE_OVER).catch(() => {});
    this.#client = undefined;
  }
}

export async function httpExchange(
  plan: HttpPlan,
  opts: ExchangeOptions,
  shared?: RoundConnection,
): Promise<ExchangeResult> {
  const out: ExchangeResult = { observation: { kind: 'failure', code: 'ECONNREFUSED' } };
  const inFlight: InFlight = { endpoint: plan.endpoint, opts, out };
  const client = shared ? shared.use(inFlight) : probeClient(plan.endpoint, 1, () => inFlight);
  // A reused connection is ready now; a new one moves this to when it is.
  out.readyAt = performance.now();
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
    if (shared) shared.settle(out);
    else client.destroy(EXCHANGE_OVER).catch(() => {});
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
