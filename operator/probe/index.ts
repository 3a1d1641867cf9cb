/**
 * Binding reachability probes: prove that every supportedInterfaces entry of an AgentCard really
 * speaks its declared binding and version. The public API of operator/probe.
 *
 * How a controller uses it:
 *
 *   const scheduler = new ProbeScheduler({
 *     policy: createAddressPolicy({ allowCidrs: flags.probeAllowCidr }),
 *     globalConcurrency: flags.probeConcurrency,
 *     registry,
 *     onResults: (key, results) => {
 *       const card = cache.get(key); // the AgentCard as last read / written
 *       const out = nextInterfacesStatus({
 *         previous: card.status?.interfaces,
 *         previousCondition: card.status?.conditions?.find((c) => c.type === INTERFACES_REACHABLE),
 *         results,
 *         now: new Date(),
 *         generation: card.metadata.generation,
 *       });
 *       if (out.writeNeeded) patchStatus(card, out.interfaces, out.reachableInterfaces, out.condition);
 *     },
 *   });
 *   // On each reconcile of namespace/name (probe.enabled !== false):
 *   scheduler.upsert(`${ns}/${name}`, {
 *     interfaces: spec.card.supportedInterfaces,
 *     intervalMs: parseDuration(spec.probe?.interval ?? '60s'),
 *     timeoutMs: parseDuration(spec.probe?.timeout ?? '5s'),
 *     headersFor: (url) => credentialHeaders(url, resolvedCredentials), // Secret values read by the controller
 *     revision: secretResourceVersions.join(','),
 *   });
 *   // On delete, or probe.enabled === false:
 *   scheduler.remove(`${ns}/${name}`);
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
export { PROBE_REASONS } from '../api/reasons.ts';
export {
  KNOWN_BINDINGS,
  BODY_LIMIT_BYTES,
  type ProbeReason,
  type ProbeResult,
  type ProbeTarget,
  type ProbePhases,
} from './types.ts';
