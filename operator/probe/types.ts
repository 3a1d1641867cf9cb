/**
 * The probe's vocabulary. The verdict reasons (PROBE_REASONS) live with every other status reason
 * in api/reasons.ts.
 */
import type { PROBE_REASONS } from '../api/reasons.ts';

export type ProbeReason = (typeof PROBE_REASONS)[number];

/**
 * The bindings the probe knows how to ask (A2A 1.0 specification, §§9-11); anything else is
 * Unsupported.
 */
export const KNOWN_BINDINGS = ['JSONRPC', 'HTTP+JSON', 'GRPC'] as const;
export type KnownBinding = (typeof KNOWN_BINDINGS)[number];

/** The part of an A2A AgentInterface the probe needs. */
export interface ProbeTarget {
  url: string;
  protocolBinding: string;
  protocolVersion: string;
  tenant?: string;
}

export interface ProbePhases {
  dnsMs?: number;
  connectMs?: number;
  tlsMs?: number;
  requestMs?: number;
}

export interface ProbeResult {
  url: string;
  protocolBinding: string;
  protocolVersion: string;
  reachable: boolean;
  reason: ProbeReason;
  /** One line, composed by the probe; never response bodies or header values. */
  message: string;
  latencyMs: number;
  /** notAfter of the peer's leaf certificate (ISO 8601), for TLS interfaces. */
  tlsNotAfter?: string;
  phases: ProbePhases;
}

/** What the classifier decides: the verdict without the timings. */
export interface Verdict {
  reachable: boolean;
  reason: ProbeReason;
  message: string;
}

/** Caps that keep one probe cheap and harmless. */
export const BODY_LIMIT_BYTES = 64 * 1024;
