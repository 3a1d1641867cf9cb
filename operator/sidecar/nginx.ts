/**
 * The nginx mode's configuration: a stock unprivileged nginx serves the mounted card ConfigMap
 * with the same paths, headers, conditional requests, CORS, 405 and audience selection as the
 * Node mode (server.ts), for a fraction of its memory. It uses only modules every nginx build has
 * (core, rewrite, map, static): no njs or other dynamic module, so any nginx image serves it.
 *
 * The text is a pure function of a few settings. The webhook writes it into the Pod it injects
 * (a Pod annotation, projected as a file by a downwardAPI volume; see
 * ../webhook/nginx-container.ts), so there is no per-namespace
 * object to manage and nothing to reload: the text never depends on the card or its audiences.
 * nginx reads the card files on every request (no open_file_cache), following the kubelet's
 * `..data` symlinks, so a new version of the ConfigMap is served as soon as the kubelet has
 * swapped it in, and an audience added or removed is a file that appears or disappears.
 *
 * Cache-Control's max-age comes from the ConfigMap on every request too, from the keys that spell
 * it one digit per key name (max-age-keys.ts): nginx alone can test whether a file exists, but
 * not put a file's content in a header.
 *
 * Known differences from the Node mode, by design of a file server (documented in docs/operations.md, "nginx mode"):
 * - ETag is nginx's (modification time and size), not a hash of the bytes; it changes with every
 *   version the kubelet writes, unless a file keeps its size and is rewritten within a second.
 * - The files are served as they are: the Node mode's checks (valid JSON, a v1.0 card) are left
 *   to the controller, which validates every card before it publishes it.
 * - max-age is read from the digit keys the operator publishes, not from `cache-max-age-seconds`.
 * - X-Forwarded-Host (when trusted) must already be lowercase to select a variant.
 * - No per-Pod metrics port.
 */
import { ALLOW } from './respond.ts';
import { MAX_AGE_PLACES, maxAgeDigitKey } from './max-age-keys.ts';
import { CORS_HEADERS, MAX_AGE_LIMIT } from './version.ts';

export interface NginxConfigOptions {
  /** The mounted card ConfigMap. */
  cardDir: string;
  /** `listen` parameters, e.g. `8095` or `127.0.0.1:8095`. */
  listen: string[];
  /** A writable directory (an emptyDir in the Pod) for the pid file and nginx's temporary files. */
  tmpDir: string;
  /** max-age when the card directory has no max-age digit keys (max-age-keys.ts). */
  maxAgeSeconds: number;
  keepAliveSeconds: number;
  maxHeaderBytes: number;
  trustForwardedHost: boolean;
}

/** Where the injected nginx finds its configuration and writable directory. */
export const NGINX_CONF_DIR = '/etc/agentcard-nginx';
export const NGINX_CONF_FILE = 'nginx.conf';
export const NGINX_TMP_DIR = '/tmp';
/** The unprivileged user of the nginxinc/nginx-unprivileged image. */
export const NGINX_UID = 101;

// RFC 1123 host name, the same rule as audience.ts (lowercase: nginx lowercases $host itself).
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const DNS_NAME = `${LABEL}(?:\\.${LABEL})*`;

/** nginx's configuration text for the nginx mode. */
export function nginxConfig(o: NginxConfigOptions): string {
  for (const [name, value] of [
    ['cardDir', o.cardDir],
    ['tmpDir', o.tmpDir],
  ] as const) {
    if (!/^\/[A-Za-z0-9._/-]*$/.test(value))
      throw new Error(`${name} must be an absolute path, got '${value}'`);
  }
  for (const l of o.listen) {
    if (!/^[0-9a-fA-F.:[\]]*\d+$/.test(l)) throw new Error(`listen must be [ADDRESS:]PORT, got '${l}'`);
  }
  const cors = pairs(CORS_HEADERS);
  const maxAgeVariables = places()
    .map((p) => `$agentcard_max_age_${p}`)
    .join('');
  const text = (status: number, body: string, extra = '') =>
    `default_type "text/plain; charset=utf-8";
      add_header Cache-Control "no-store" always;
      add_header X-Content-Type-Options "nosniff" always;${extra}
      return ${status} "${body}\\n";`;
  // The host to select by: Host ($host: nginx lowercases it and strips the port), or with a
  // trusted proxy the first X-Forwarded-Host (none that can be parsed: no host). Anything that is
  // not a DNS name becomes `~`, which no ConfigMap key can contain, so no file outside the set is
  // ever named after a host.
  const hostSource = o.trustForwardedHost
    ? [
        `set $agentcard_raw_host "";`,
        `if ($http_x_forwarded_host = "") { set $agentcard_raw_host $host; }`,
        `if ($http_x_forwarded_host ~ "^[ \\t]*(?<forwarded_first>[^, \\t]+)") { set $agentcard_raw_host $forwarded_first; }`,
      ]
    : [`set $agentcard_raw_host $host;`];
  const select = [
    ...hostSource,
    `set $agentcard_host "~";`,
    `if ($agentcard_raw_host ~ "^(?<host_name>${DNS_NAME})\\.?(?::[0-9]{1,5})?$") { set $agentcard_host $host_name; }`,
    // *.<suffix> matches exactly one more leading label.
    `set $agentcard_suffix "~";`,
    `if ($agentcard_host ~ "^[^.]+\\.(?<host_parent>.+)$") { set $agentcard_suffix $host_parent; }`,
    ...maxAgeTests(),
    `set $agentcard_cache_control "public, max-age=${maxAgeVariables}";`,
    `if ($agentcard_cache_control = "public, max-age=") { set $agentcard_cache_control "public, max-age=${o.maxAgeSeconds}"; }`,
  ];
  // The three documents: a location that routes by method, and one that serves the file.
  const document = (route: string, tryFiles: string) => `    location = /.agentcard/${route} {
      internal;
      if ($request_method = OPTIONS) { rewrite ^ /.agentcard/options last; }
      if ($request_method !~ ^(?:GET|HEAD)$) { return 405; }
      set $agentcard_document ${route};
      rewrite ^ /.agentcard/select last;
    }
    location = /.agentcard/document-${route} {
      internal;
${documentHeaders(cors)}
      try_files ${tryFiles} @absent;
    }`;
  return `# agentcard sidecar, nginx mode. Written by agentcard-operator (operator/sidecar/nginx.ts);
# the same for every Pod and card: cards and audiences change as files, never as configuration.
# Only the rewrite module's set and if decide: no map block (each one costs nginx's master and
# worker about 1 MiB of heap with glibc), and no njs or other dynamic module.
worker_processes 1;
pid ${o.tmpDir}/nginx.pid;
error_log stderr warn;

events {
  # Not a lockout: when connections run out, nginx closes idle keep-alive ones to make room.
  worker_connections 1024;
}

http {
  access_log off;
  server_tokens off;
  client_body_temp_path ${o.tmpDir}/client_body;
  proxy_temp_path ${o.tmpDir}/proxy;
  fastcgi_temp_path ${o.tmpDir}/fastcgi;
  uwsgi_temp_path ${o.tmpDir}/uwsgi;
  scgi_temp_path ${o.tmpDir}/scgi;

  # The same limits as the Node mode (server.ts SIDECAR_DEFAULTS).
  keepalive_timeout ${o.keepAliveSeconds}s ${o.keepAliveSeconds};
  keepalive_requests 10000;
  client_header_buffer_size 1k;
  large_client_header_buffers 4 ${Math.ceil(o.maxHeaderBytes / 1024)}k;
  client_header_timeout 30s;
  reset_timedout_connection on;
  # Every file is read as it is now: the kubelet swaps versions under the same names.
  open_file_cache off;
  etag on;
  # RFC 9110 section 13.1.3: not modified when the file is not newer than the date given.
  if_modified_since before;
  merge_slashes off;
  # Whole documents only, as the Node mode answers (a card is a few KB).
  max_ranges 0;

  server {
    listen ${o.listen.join(';\n    listen ')};
    root ${o.cardDir};
    default_type application/json;
    charset off;

    error_page 404 @not_found;
    error_page 405 @not_allowed;
    error_page 503 @not_loaded;

    # Requests are routed by the raw request target, as the Node mode does: nginx's normalized
    # URI would also answer /.well-known/./agent-card.json, //.well-known/... or %2e-encoded dots.
    location / {
      if ($request_uri ~ "^/\\.well-known/agent-card\\.json(?:\\?.*)?$") { rewrite ^ /.agentcard/agent-card last; }
      if ($request_uri ~ "^/\\.well-known/agent\\.json(?:\\?.*)?$") { rewrite ^ /.agentcard/agent last; }
      if ($request_uri ~ "^/\\.well-known/jwks\\.json(?:\\?.*)?$") { rewrite ^ /.agentcard/jwks last; }
      if ($request_uri ~ "^/(?:healthz)?(?:\\?.*)?$") { rewrite ^ /.agentcard/health last; }
      return 404;
    }

${document('agent-card', '/host.$agentcard_host.agent-card.json /wildcard.$agentcard_suffix.agent-card.json /agent-card.json')}
${document('agent', '/host.$agentcard_host.agent.json /wildcard.$agentcard_suffix.agent.json /agent.json')}
${document('jwks', '/jwks.json')}
    # A document's host and Cache-Control, in a location that only rewrites afterwards (an \`if\`
    # that matches takes over the location's configuration, so it must not share one with
    # try_files). max-age: one digit per place, from the keys that exist (max-age-keys.ts).
    location = /.agentcard/select {
      internal;
      # The digit keys' existence, remembered for a second: a third of the CPU per request (one
      # stat per place and digit otherwise); a new max-age shows at most a second after its card.
      open_file_cache max=64 inactive=60s;
      open_file_cache_valid 1s;
      open_file_cache_errors on;
${select.map((line) => `      ${line}`).join('\n')}
      rewrite ^ /.agentcard/document-$agentcard_document last;
    }
    # 200 whatever the card's state, for load balancers' default health checks.
    location = /.agentcard/health {
      internal;
      if ($request_method = OPTIONS) { rewrite ^ /.agentcard/options-options last; }
      if ($request_method !~ ^(?:GET|HEAD)$) { return 405; }
      ${text(200, 'ok')}
    }
    # A CORS preflight (Fetch standard, "CORS protocol") has both an Origin and a requested method.
    location = /.agentcard/options {
      internal;
      set $agentcard_preflight "$http_origin|$http_access_control_request_method";
      if ($agentcard_preflight ~ "^.+\\|.+$") { rewrite ^ /.agentcard/options-preflight last; }
      rewrite ^ /.agentcard/options-options last;
    }
    location = /.agentcard/options-options {
      internal;
      add_header Allow "${ALLOW}" always;
      add_header X-Content-Type-Options "nosniff" always;
      return 204;
    }
    location = /.agentcard/options-preflight {
      internal;
${cors.map(([k, v]) => `      add_header ${k} "${v}" always;`).join('\n')}
      add_header Access-Control-Allow-Methods "${ALLOW}" always;
      add_header Access-Control-Allow-Headers "*" always;
      add_header Access-Control-Max-Age "86400" always;
      add_header X-Content-Type-Options "nosniff" always;
      return 204;
    }
    # A missing document: 404 when a card is published, 503 until then (the volume is empty).
    location @absent {
      if (-f $document_root/agent-card.json) { return 404; }
      return 503;
    }
    location @not_found {
      ${text(404, 'not found')}
    }
    location @not_allowed {
      ${text(405, 'method not allowed', `\n      add_header Allow "${ALLOW}" always;`)}
    }
    location @not_loaded {
      ${text(503, 'no card loaded yet', '\n      add_header Retry-After "5" always;')}
    }
  }
}
`;
}

function documentHeaders(cors: [string, string][]): string {
  return [
    `add_header Cache-Control $agentcard_cache_control;`,
    ...cors.map(([k, v]) => `add_header ${k} "${v}";`),
    `add_header X-Content-Type-Options "nosniff" always;`,
  ]
    .map((line) => `      ${line}`)
    .join('\n');
}

function pairs(flat: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}

/** The places of a max-age, highest first. */
function places(): number[] {
  return Array.from({ length: MAX_AGE_PLACES }, (_, i) => MAX_AGE_PLACES - 1 - i);
}

/**
 * One `if (-f ...)` per place and digit. Every variable starts empty: a place without a key adds
 * nothing to the number.
 */
function maxAgeTests(): string[] {
  const lines: string[] = [];
  for (const p of places()) lines.push(`set $agentcard_max_age_${p} "";`);
  for (const p of places()) {
    // The highest place never holds 0 (no leading zeros) nor more than the limit's first digit.
    const [low, high] = p === MAX_AGE_PLACES - 1 ? [1, Number(String(MAX_AGE_LIMIT)[0])] : [0, 9];
    for (let d = low; d <= high; d++) {
      lines.push(`if (-f $document_root/${maxAgeDigitKey(p, d)}) { set $agentcard_max_age_${p} ${d}; }`);
    }
  }
  return lines;
}
