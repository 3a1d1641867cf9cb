/**
 * probeInterface: ask one AgentInterface the A2A question of its declared binding and version
 * and return the verdict with its timings. Planning (calls.ts) and judging (classify.ts) are
 * pure; this module only wires them to the network (http.ts, grpc.ts).
 */
import { randomUUID } from 'node:crypto';
import { planProbe } from './calls.ts';
import { classify } from './classify.ts';
import type { CaOption, Resolver } from './connect.ts';
import { deadline, timeoutReason } from './deadline.ts';
import { grpcExchange } from './grpc.ts';
import { type ExchangeResult, type RoundConnection, httpExchange } from './http.ts';
import type { OwnerCheck } from './ownership.ts';
import type { AddressPolicy } from './policy.ts';
import type { ServicePortCheck } from './service-port.ts';
import { BODY_LIMIT_BYTES, type ProbePhases, type ProbeResult, type ProbeTarget } from './types.ts';

export interface ProbeOptions {
  /** Total deadline of the probe: DNS, connect, TLS, request and response. */
  timeoutMs: number;
  policy: AddressPolicy;
  /** The namespace rule of the policy (the operator's; the CLI has none). */
  owner?: OwnerCheck;
  /**
   * The Service port check (the operator's; service-port.ts): a URL naming a Service of the
   * card's namespace by a port it does not have fails before any connection is tried.
   */
  servicePort?: ServicePortCheck;
  /** Headers for this interface only (credentials); never sent anywhere else. */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Deadline for TCP connect plus TLS handshake; default min(timeoutMs, 3000). */
  connectTimeoutMs?: number;
  resolver?: Resolver;
  /** Extra trusted CAs (PEM) on top of the system's. */
  ca?: CaOption;
  bodyLimitBytes?: number;
  /**
   * The connection this round's other HTTP probes of the same origin use (http.ts); without it,
   * the probe opens and closes its own. gRPC probes always open their own.
   */
  roundConnection?: RoundConnection;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Headers that belong to the probe's own framing and protocol, not to credentials.
const RESERVED = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'te',
  'upgrade',
]);

/** Throws on a header that cannot be sent; the message names the header, never its value. */
export function checkHeaders(headers: Record<string, string>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (!TOKEN.test(name)) throw new Error(`header name '${name}' is not a valid HTTP token`);
    if (RESERVED.has(name.toLowerCase()) || name.toLowerCase().startsWith('grpc-')) {
      throw new Error(`header '${name}' is set by the probe itself`);
    }
    if (/[\r\n\0]/.test(value)) throw new Error(`header '${name}' has a value with a line break or NUL`);
  }
}

const round = (ms: number) => Math.round(ms);

export async function probeInterface(target: ProbeTarget, opts: ProbeOptions): Promise<ProbeResult> {
  const base = {
    url: target.url,
    protocolBinding: target.protocolBinding,
    protocolVersion: target.protocolVersion,
  };
  const plan = planProbe(target, { taskId: randomUUID(), rpcId: `agentcard-probe-${randomUUID()}` });
  if (plan.transport === 'none') {
    return {
      ...base,
      reachable: false,
      reason: 'Unsupported',
      message: plan.message,
      latencyMs: 0,
      phases: {},
    };
  }
  const headers = opts.headers ?? {};
  checkHeaders(headers);

  const start = performance.now();
  const timeout = deadline(opts.timeoutMs, timeoutReason, opts.signal);
  const signal = timeout.signal;
  const phases: ProbePhases = {};
  const exchangeOpts = {
    policy: opts.policy,
    owner: opts.owner,
    resolver: opts.resolver,
    connectTimeoutMs: opts.connectTimeoutMs ?? Math.min(opts.timeoutMs, 3000),
    signal,
    phases,
    ca: opts.ca,
    headers,
    bodyLimit: opts.bodyLimitBytes ?? BODY_LIMIT_BYTES,
    deadlineAt: start + opts.timeoutMs,
  };
  let exchange: ExchangeResult;
  try {
    const portProblem = await opts.servicePort?.(plan.endpoint.hostname, plan.endpoint.port, signal);
    if (portProblem !== undefined) {
      return {
        ...base,
        reachable: false,
        reason: 'ServicePortNotFound',
        message: portProblem,
        latencyMs: round(performance.now() - start),
        phases,
      };
    }
    exchange =
      plan.transport === 'http'
        ? await httpExchange(plan, exchangeOpts, opts.roundConnection)
        : await grpcExchange(plan, exchangeOpts);
  } finally {
    timeout.done();
  }
  const end = performance.now();
  if (exchange.readyAt !== undefined && exchange.observation.kind !== 'failure') {
    phases.requestMs = Math.round((end - exchange.readyAt) * 100) / 100;
  }
  const verdict = classify(plan.expect, exchange.observation);
  if (exchange.note) verdict.message += ` (${exchange.note})`;
  const result: ProbeResult = { ...base, ...verdict, latencyMs: round(end - start), phases };
  if (exchange.tlsNotAfter) result.tlsNotAfter = exchange.tlsNotAfter;
  return result;
}
