/**
 * Writes the API server has served, read from its own `/metrics` (`apiserver_request_total`):
 * the benches count what an operator costs the API server, not what the operator says it sent.
 */
import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** The API server's `/metrics` text (Prometheus text, not JSON: not through KubeClient). */
export async function apiServerMetrics(kc: KubeConfig): Promise<string> {
  const opts: Parameters<typeof request>[1] = { method: 'GET' };
  await kc.applyToHTTPSOptions(opts);
  return new Promise<string>((ok, fail) => {
    const req = request(new URL('/metrics', kc.getCurrentCluster()!.server), opts, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => ok(body));
    });
    req.on('error', fail);
    req.end();
  });
}

/** Write requests (PATCH, APPLY, POST, PUT, DELETE) to the named resources, summed. */
export async function apiWrites(kc: KubeConfig, resources: readonly string[]): Promise<number> {
  const text = await apiServerMetrics(kc);
  const resource = new RegExp(`resource="(${resources.join('|')})"`);
  let n = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (!/verb="(PATCH|APPLY|POST|PUT|DELETE)"/.test(line)) continue;
    if (!resource.test(line)) continue;
    n += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return n;
}
