/**
 * Binding reachability probes: prove that every supportedInterfaces entry of an AgentCard really
 * speaks its declared binding and version. The public API of operator/probe.
 */
export { probeInterface, type ProbeOptions } from './probe.ts';
export { createAddressPolicy, type AddressPolicy, type AddressPolicyOptions } from './policy.ts';
export {
  ProbeScheduler,
  roundDelayMs,
  backoffRounds,
  type ProbeConfig,
  type ProbeSchedulerOptions,
} from './scheduler.ts';
export {
  nextInterfacesStatus,
  INTERFACES_REACHABLE,
  DEFAULT_REFRESH_AFTER_MS,
  type InterfaceStatus,
  type Condition,
  type InterfacesStatusInput,
  type InterfacesStatusOutput,
} from './status.ts';
export { credentialHeaders, normalizeInterfaceUrl, type ResolvedCredential } from './credentials.ts';
export { createProbeMetrics, type ProbeMetrics } from './metrics.ts';
export { systemResolver, type Resolver, type CaOption } from './connect.ts';
export {
  PROBE_REASONS,
  KNOWN_BINDINGS,
  BODY_LIMIT_BYTES,
  type ProbeReason,
  type ProbeResult,
  type ProbeTarget,
  type ProbePhases,
} from './types.ts';
