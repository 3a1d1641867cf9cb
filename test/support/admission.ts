// An AdmissionReview of a Pod being created in `team-a`, as the API server sends it to the
// webhook (admission.k8s.io/v1); `annotations` (e.g. agentcard.dev/inject) ask for the sidecar.
export const admissionReview = (annotations?: Record<string, string>) => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'e911857d-c318-11e8-bbad-025000000001',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'CREATE',
    namespace: 'team-a',
    object: {
      metadata: { generateName: 'agent-', namespace: 'team-a', ...(annotations ? { annotations } : {}) },
      spec: { containers: [{ name: 'agent', image: 'agent:1' }] },
    },
  },
});
