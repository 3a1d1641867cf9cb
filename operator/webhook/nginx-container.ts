/**
 * What the webhook injects in the nginx serving mode (`--sidecar-server nginx`): a stock
 * unprivileged nginx with the operator's configuration (../sidecar/nginx.ts). The configuration
 * needs no dynamic module (no njs), so any nginx image that runs as an unprivileged user serves it.
 *
 * The configuration reaches the container without any object outside the Pod: the webhook puts
 * its text in a Pod annotation and a downwardAPI volume projects that annotation as a file. The
 * text is the same for every Pod and card (cards and audiences are files in the card volume),
 * so it never needs a reload and nothing has to be created per namespace.
 */
import type { V1Container, V1Volume } from '@kubernetes/client-node';
import { NGINX_CONF_ANNOTATION } from '../api/names.ts';
import { SIDECAR_DEFAULTS } from '../sidecar/server.ts';
import { sidecarProbes } from './probes.ts';
import { NGINX_CONF_DIR, NGINX_CONF_FILE, NGINX_TMP_DIR, NGINX_UID, nginxConfig } from '../sidecar/nginx.ts';

export const NGINX_CONF_VOLUME = 'agentcard-nginx-conf';
export const NGINX_TMP_VOLUME = 'agentcard-nginx-tmp';
/** max-age when the ConfigMap has no cache-max-age-seconds (the AgentCard's default). */
export const NGINX_DEFAULT_MAX_AGE_SECONDS = 300;

/** The file the injected nginx runs with, by annotation (projected as a file). */
export function injectedNginxFiles(opts: {
  cardDir: string;
  port: number;
  trustForwardedHost: boolean;
}): Record<string, string> {
  const conf = nginxConfig({
    cardDir: opts.cardDir,
    listen: [String(opts.port)],
    tmpDir: NGINX_TMP_DIR,
    maxAgeSeconds: NGINX_DEFAULT_MAX_AGE_SECONDS,
    keepAliveSeconds: SIDECAR_DEFAULTS.keepAliveSeconds,
    maxHeaderBytes: SIDECAR_DEFAULTS.maxHeaderBytes,
    trustForwardedHost: opts.trustForwardedHost,
  });
  return {
    [NGINX_CONF_ANNOTATION]: conf,
  };
}

/** The container: the image's nginx (not its entrypoint, which would edit files), in the foreground. */
export function nginxContainer(base: {
  name: string;
  image: string;
  imagePullPolicy: string;
  port: number;
  portName: string;
  cardVolume: string;
  cardDir: string;
}): V1Container {
  return {
    name: base.name,
    image: base.image,
    imagePullPolicy: base.imagePullPolicy,
    command: ['nginx'],
    args: ['-c', `${NGINX_CONF_DIR}/${NGINX_CONF_FILE}`, '-e', 'stderr', '-g', 'daemon off;'],
    ports: [{ name: base.portName, containerPort: base.port, protocol: 'TCP' }],
    resources: {
      requests: { cpu: '5m', memory: '16Mi' },
      limits: { memory: '64Mi' },
    },
    ...sidecarProbes(base.port),
    // The `restricted` Pod Security Standard, field by field; nginx writes only to its emptyDir.
    securityContext: {
      runAsNonRoot: true,
      runAsUser: NGINX_UID,
      runAsGroup: NGINX_UID,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
    volumeMounts: [
      { name: base.cardVolume, mountPath: base.cardDir, readOnly: true },
      { name: NGINX_CONF_VOLUME, mountPath: NGINX_CONF_DIR, readOnly: true },
      { name: NGINX_TMP_VOLUME, mountPath: NGINX_TMP_DIR },
    ],
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
}

/** The two extra volumes: the projected configuration and nginx's small writable directory. */
export function nginxVolumes(): V1Volume[] {
  return [
    {
      name: NGINX_CONF_VOLUME,
      downwardAPI: {
        items: [
          {
            path: NGINX_CONF_FILE,
            fieldRef: { fieldPath: `metadata.annotations['${NGINX_CONF_ANNOTATION}']` },
          },
        ],
      },
    },
    { name: NGINX_TMP_VOLUME, emptyDir: { sizeLimit: '16Mi' } },
  ];
}
