// The injected sidecar's probes, the same in both modes (nginx and node), on `/healthz`, which
// answers 200 whatever the card's state (operator/sidecar/respond.ts).
import type { V1Probe } from '@kubernetes/client-node';

/**
 * A startup probe, then a liveness probe; deliberately no readiness probe: a native sidecar's
 * readiness would hold the agent's Pod unready until its card is published.
 *
 * The startup probe gives a slow start up to 2 minutes before the liveness probe counts (its
 * 3 failures 20 s apart would otherwise kill a sidecar still starting on a busy node, and each
 * restart starts over, as the operator's own probes did). As a native sidecar, the kubelet
 * starts the agent's containers once this probe passes
 * (https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/), so the card is served
 * as soon as the agent runs; probing every second keeps that wait short.
 */
export function sidecarProbes(port: number): { startupProbe: V1Probe; livenessProbe: V1Probe } {
  return {
    startupProbe: { httpGet: { path: '/healthz', port }, periodSeconds: 1, failureThreshold: 120 },
    livenessProbe: { httpGet: { path: '/healthz', port }, periodSeconds: 20, failureThreshold: 3 },
  };
}
