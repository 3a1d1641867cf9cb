import { Registry, Counter } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startHealthServer, type HealthServer } from '../../../operator/manager/health-server.ts';

let srv: HealthServer | undefined;
afterEach(async () => {
  await srv?.close();
  srv = undefined;
});

describe('health server', () => {
  it('serves /healthz, /readyz following the check, and /metrics', async () => {
    const registry = new Registry();
    new Counter({ name: 'test_total', help: 'h', registers: [registry] }).inc(3);
    let reason: string | undefined = 'informers not synced';
    srv = await startHealthServer({ host: '127.0.0.1', port: 0, registry, notReadyReason: () => reason });
    const base = `http://127.0.0.1:${srv.port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toContain('informers not synced');
    reason = undefined;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    expect(await metrics.text()).toContain('test_total 3');
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/healthz`, { method: 'POST' })).status).toBe(405);
  });
});
