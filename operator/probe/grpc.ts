/**
 * One unary gRPC call over node:http2: h2 over TLS for `https://`, h2c (prior knowledge) for
 * `http://`, and for a bare `host:port` TLS first, then h2c when the peer does not speak TLS.
 * The connection comes from openConnection (address policy on the resolved address).
 */
import http2 from 'node:http2';
import { type ProbePlan, hostForUrl } from './calls.ts';
import { type Observation, PROBE_CODES } from './classify.ts';
import { type Connection, ProbeFailure, openConnection } from './connect.ts';
import { decodeStatusErrorInfo } from './grpc-wire.ts';
import { type ExchangeOptions, type ExchangeResult, USER_AGENT, failureObservation } from './http.ts';

type GrpcPlan = Extract<ProbePlan, { transport: 'grpc' }>;

// TLS handshake failures that mean "this port does not speak TLS at all".
const NOT_TLS = new Set([
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'ERR_SSL_PACKET_LENGTH_TOO_LONG',
  'ECONNRESET',
  'EPROTO',
]);

export async function grpcExchange(plan: GrpcPlan, opts: ExchangeOptions): Promise<ExchangeResult> {
  const out: ExchangeResult = { observation: { kind: 'failure', code: 'ECONNREFUSED' } };
  const { endpoint } = plan;
  let connection: Connection;
  let secure = endpoint.scheme !== 'http';
  try {
    try {
      connection = await openConnection(endpoint, {
        ...opts,
        tls: secure ? { alpn: ['h2'], ca: opts.ca } : undefined,
      });
    } catch (err) {
      if (!(endpoint.scheme === 'bare' && err instanceof ProbeFailure && NOT_TLS.has(err.code))) throw err;
      secure = false;
      delete opts.phases.tlsMs;
      connection = await openConnection(endpoint, { ...opts, tls: undefined });
    }
    out.tlsNotAfter = connection.tlsNotAfter;
    out.readyAt = performance.now();
    if (secure && connection.alpnProtocol !== 'h2') {
      connection.socket.destroy();
      throw new ProbeFailure(PROBE_CODES.notH2, 'TLS peer did not agree on h2 by ALPN');
    }
    let callOpts = opts;
    if (endpoint.scheme === 'bare' && !secure && Object.keys(opts.headers).length) {
      // The URL did not ask for cleartext: credentials are not sent over it.
      callOpts = { ...opts, headers: {} };
      out.note = 'credentials withheld: no TLS on a bare host:port';
    }
    out.observation = await unaryCall(plan, connection, secure, callOpts);
  } catch (err) {
    out.observation = failureObservation(err, opts.signal);
    if (err instanceof ProbeFailure && err.tlsNotAfter) out.tlsNotAfter = err.tlsNotAfter;
  }
  return out;
}

function unaryCall(
  plan: GrpcPlan,
  connection: Connection,
  secure: boolean,
  opts: ExchangeOptions,
): Promise<Observation> {
  const authority = `${hostForUrl(plan.endpoint.hostname)}:${plan.endpoint.port}`;
  const scheme = secure ? 'https' : 'http';
  const session = http2.connect(`${scheme}://${authority}`, {
    createConnection: () => connection.socket,
    maxHeaderListPairs: 64,
    maxSessionMemory: 1,
  });
  return new Promise<Observation>((resolve, reject) => {
    let settled = false;
    const finish = (result: Observation | Error) => {
      if (settled) return;
      settled = true;
      opts.signal.removeEventListener('abort', onAbort);
      session.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const onAbort = () => finish(new ProbeFailure(PROBE_CODES.timeout));
    opts.signal.addEventListener('abort', onAbort, { once: true });
    session.on('error', (err: NodeJS.ErrnoException) =>
      finish(new ProbeFailure(err.code ?? 'ERR_HTTP2_ERROR')),
    );

    const metadata: Record<string, string> = {};
    // Caller headers (credentials) first, lower-cased as HTTP/2 requires; protocol headers win.
    for (const [name, value] of Object.entries(opts.headers)) metadata[name.toLowerCase()] = value;
    const stream = session.request({
      ...metadata,
      ':method': 'POST',
      ':scheme': scheme,
      ':authority': authority,
      ':path': plan.path,
      'content-type': 'application/grpc',
      te: 'trailers',
      'user-agent': USER_AGENT,
      'grpc-timeout': `${Math.max(1, Math.floor(opts.deadlineAt - performance.now()))}m`,
      ...plan.metadata,
    });
    let httpStatus = 0;
    let contentType: string | undefined;
    let status: string | undefined;
    let details: string | undefined;
    let received = 0;
    const take = (headers: http2.IncomingHttpHeaders) => {
      if (typeof headers['grpc-status'] === 'string') status = headers['grpc-status'];
      const blob = headers['grpc-status-details-bin'];
      if (typeof blob === 'string') details = blob;
    };
    stream.on('response', (headers) => {
      httpStatus = Number(headers[':status'] ?? 0);
      contentType = typeof headers['content-type'] === 'string' ? headers['content-type'] : undefined;
      take(headers); // A trailers-only response carries grpc-status in the headers.
    });
    stream.on('trailers', take);
    stream.on('data', (chunk: Buffer) => {
      received += chunk.length;
      // A GetTask answer for a random id is an error with no message; cap whatever comes.
      if (received > opts.bodyLimit) finish(observation(httpStatus, contentType, status, details));
    });
    stream.on('error', (err: NodeJS.ErrnoException) =>
      finish(new ProbeFailure(err.code ?? 'ERR_HTTP2_STREAM_ERROR')),
    );
    stream.on('close', () => {
      if (httpStatus === 0) finish(new ProbeFailure('ERR_HTTP2_STREAM_CANCEL'));
      else finish(observation(httpStatus, contentType, status, details));
    });
    stream.end(plan.frame);
  });
}

function observation(
  httpStatus: number,
  contentType?: string,
  status?: string,
  details?: string,
): Observation {
  const grpcStatus = status !== undefined && /^\d+$/.test(status) ? Number(status) : undefined;
  const errorInfo = details ? decodeStatusErrorInfo(Buffer.from(details, 'base64')) : undefined;
  return { kind: 'grpc', httpStatus, contentType, grpcStatus, errorInfo };
}
