// The MutatingWebhookConfiguration the webhook tests register: Pod CREATE, sent to a webhook on
// loopback, limited to the test's own namespaces (other tests share the control plane), and
// failurePolicy Ignore, as the chart ships it.
import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';

export interface PodWebhookOptions {
  name: string;
  /** The loopback port the webhook listens on. */
  port: number;
  namespaces: string[];
  /** PEM. Without it, the webhook's certificate upkeep must patch the caBundle in. */
  caPem?: string;
  reinvocationPolicy?: 'IfNeeded' | 'Never';
  timeoutSeconds?: number;
}

/** Registers the configuration; the returned function deletes it (and ignores a missing one). */
export async function registerPodWebhook(
  kc: KubeConfig,
  options: PodWebhookOptions,
): Promise<() => Promise<void>> {
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  await admission.createMutatingWebhookConfiguration({
    body: {
      metadata: { name: options.name },
      webhooks: [
        {
          name: 'pods.agentcard.dev',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Ignore',
          ...(options.reinvocationPolicy ? { reinvocationPolicy: options.reinvocationPolicy } : {}),
          timeoutSeconds: options.timeoutSeconds ?? 5,
          clientConfig: {
            url: `https://127.0.0.1:${options.port}/mutate-pods`,
            ...(options.caPem ? { caBundle: Buffer.from(options.caPem).toString('base64') } : {}),
          },
          namespaceSelector: {
            matchExpressions: [
              { key: 'kubernetes.io/metadata.name', operator: 'In', values: options.namespaces },
            ],
          },
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
        },
      ],
    },
  });
  return async () => {
    await admission.deleteMutatingWebhookConfiguration({ name: options.name }).catch(() => undefined);
  };
}
