/**
 * The probe's vocabulary. The verdict reasons are the same CamelCase words in
 * status.interfaces[].reason, the CLI output and the `reason` metric label.
 */

export const PROBE_REASONS = [
  'Reachable',
  'BindingMismatch',
  'VersionMismatch',
  'Unauthenticated',
  'DNSFailed',
  'ServicePortNotFound',
  'ConnectionFailed',
  'TLSError',
  'Timeout',
  'HTTPError',
  'Blocked',
  'Unsupported',
] as const;
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
