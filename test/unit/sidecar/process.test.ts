/**
 * The real `agentcard sidecar` command as a separate process, with the V8 flags the injected
 * container uses, against a directory laid out as the kubelet lays out a ConfigMap volume.
 */
import { spawnSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { Pool, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardFiles, cardJson, kubeletWrite, tempDir } from '../../support/card-files.ts';
import { spawnSidecar } from '../../support/sidecar-process.ts';
import { agentcardBin } from '../../support/test-package.ts';
import type { Running } from '../../support/sidecar-process.ts';

const CARD_PATH = '/.well-known/agent-card.json';

async function fetchText(url: string, headers: Record<string, string> = {}) {
  const res = await request(url, { headers });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

async function metricValue(s: Running, name: string): Promise<number> {
  const text = (await fetchText(`http://127.0.0.1:${s.metricsPort}/metrics`)).body;
  const line = text.split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

describe('agentcard sidecar (process)', () => {
  let dir: string;
  let s: Running;

  beforeAll(async () => {
    dir = await tempDir();
    await kubeletWrite(dir, cardFiles('1'));
    s = await spawnSidecar(dir);
  });
  afterAll(async () => {
    if (s && s.child.exitCode === null) s.child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the card from the kubelet layout', async () => {
    const res = await fetchText(`http://127.0.0.1:${s.port}${CARD_PATH}`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ name: 'weather-agent', version: '1' });
    expect(res.headers['cache-control']).toBe('public, max-age=120');
    expect((await fetchText(`http://127.0.0.1:${s.metricsPort}/readyz`)).status).toBe(200);
  });

  it('serves a new version within 2 s of a kubelet ..data swap', async () => {
    const before = await fetchText(`http://127.0.0.1:${s.port}${CARD_PATH}`);
    await kubeletWrite(dir, cardFiles('2', '30'));
    const swappedAt = Date.now();
    let res = before;
    while (Date.now() - swappedAt < 2000) {
      res = await fetchText(`http://127.0.0.1:${s.port}${CARD_PATH}`);
      if (res.headers['etag'] !== before.headers['etag']) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(JSON.parse(res.body)).toMatchObject({ version: '2' });
    expect(res.headers['cache-control']).toBe('public, max-age=30');
    // The previous ETag no longer revalidates; the new one does.
    const old = await fetchText(`http://127.0.0.1:${s.port}${CARD_PATH}`, {
      'if-none-match': before.headers['etag'] as string,
    });
    expect(old.status).toBe(200);
    const fresh = await fetchText(`http://127.0.0.1:${s.port}${CARD_PATH}`, {
      'if-none-match': res.headers['etag'] as string,
    });
    expect(fresh.status).toBe(304);
  });

  it('refuses an invalid swap and keeps serving the last good card', async () => {
    const good = await fetchText(`http://127.0.0.1:${s.port}${CARD_PATH}`);
    const failuresBefore = await metricValue(s, 'agentcard_sidecar_reload_failures_total');
    await kubeletWrite(dir, { ...cardFiles('3'), 'agent-card.json': JSON.stringify({ name: 'not a card' }) });
    const until = Date.now() + 5000;
    while ((await metricValue(s, 'agentcard_sidecar_reload_failures_total')) === failuresBefore) {
      if (Date.now() > until) throw new Error('the refusal was not counted within 5 s');
      await new Promise((r) => setTimeout(r, 20));
    }
    const after = await fetchText(`http://127.0.0.1:${s.port}${CARD_PATH}`);
    expect(after.body).toBe(good.body);
    expect(
      JSON.parse((await fetchText(`http://127.0.0.1:${s.port}/.well-known/agent.json`)).body),
    ).toMatchObject({
      version: '2',
    });
    expect(s.logs.some((l) => l.msg === 'refused new card files; still serving the previous card')).toBe(
      true,
    );
    // A valid version after the broken one is taken again.
    await kubeletWrite(dir, cardFiles('4'));
    const until2 = Date.now() + 5000;
    let version = '';
    while (version !== '4' && Date.now() < until2) {
      version = (
        JSON.parse((await fetchText(`http://127.0.0.1:${s.port}${CARD_PATH}`)).body) as { version: string }
      ).version;
    }
    expect(version).toBe('4');
  });

  it('answers 10,000 requests without growing its memory', async () => {
    const pool = new Pool(`http://127.0.0.1:${s.port}`, { connections: 8 });
    try {
      const burst = async (count: number) => {
        const statuses = new Map<number, number>();
        for (let sent = 0; sent < count; sent += 100) {
          await Promise.all(
            Array.from({ length: 100 }, async () => {
              const res = await pool.request({ path: CARD_PATH, method: 'GET' });
              await res.body.dump();
              statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
            }),
          );
        }
        return statuses;
      };
      await burst(2_000); // warm-up: JIT, buffers, connection pool
      const rssBefore = await metricValue(s, 'process_resident_memory_bytes');
      const statuses = await burst(10_000);
      const rssAfter = await metricValue(s, 'process_resident_memory_bytes');
      expect(statuses.get(200)).toBe(10_000);
      expect(rssBefore).toBeGreaterThan(0);
      // Bounded, not timed: 10,000 more requests may not add more than 8 MiB of resident memory.
      expect(rssAfter - rssBefore).toBeLessThan(8 * 1024 * 1024);
      const heapLimit = await metricValue(s, 'nodejs_heap_size_total_bytes');
      expect(heapLimit).toBeLessThan(40 * 1024 * 1024);
    } finally {
      await pool.close();
    }
  });

  it('exits 0 on SIGTERM', async () => {
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    expect(s.logs.some((l) => l.msg === 'shutting down')).toBe(true);
  });
});

describe('agentcard sidecar flags', () => {
  const runCli = (...args: string[]) =>
    spawnSync(process.execPath, [agentcardBin(), 'sidecar', ...args], { encoding: 'utf8', timeout: 15_000 });

  it.each([
    [[], 'sidecar: --dir is required'],
    [['--dir', '/nonexistent-agentcard-dir'], 'sidecar: --dir /nonexistent-agentcard-dir is not a directory'],
    [['--dir', '.', '--port', 'http'], "sidecar: --port must be an integer from 0 to 65535, got 'http'"],
    [
      ['--dir', '.', '--max-age', '90000'],
      "sidecar: --max-age must be an integer from 0 to 86400, got '90000'",
    ],
    [['--dir', '.', '--bogus'], 'sidecar: Unknown option'],
    [
      ['--dir', '.', '--max-header-size', '512'],
      "sidecar: --max-header-size must be an integer from 1024 to 1048576, got '512'",
    ],
    [
      ['--dir', '.', '--keep-alive', '0'],
      "sidecar: --keep-alive must be an integer from 1 to 86400, got '0'",
    ],
  ])('%j is a usage error with one line on stderr', (args, message) => {
    const r = runCli(...args);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(message);
  });
});

describe('AGENTCARD_TRUST_FORWARDED_HOST', () => {
  it('switches on the trust in X-Forwarded-Host, and a bad value is a usage error', async () => {
    const dir = await tempDir();
    await kubeletWrite(dir, {
      ...cardFiles('1'),
      'host.api.example.com.agent-card.json': cardJson('1', 'api'),
    });
    const bad = spawnSync(process.execPath, [agentcardBin(), 'sidecar', '--dir', dir], {
      encoding: 'utf8',
      timeout: 15_000,
      env: { ...process.env, AGENTCARD_TRUST_FORWARDED_HOST: 'yes' },
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("AGENTCARD_TRUST_FORWARDED_HOST must be true or false, got 'yes'");
    const s = await spawnSidecar(dir, [], { AGENTCARD_TRUST_FORWARDED_HOST: 'true' });
    try {
      const res = await fetchText(`http://127.0.0.1:${s.port}${CARD_PATH}`, {
        'x-forwarded-host': 'api.example.com',
      });
      expect(JSON.parse(res.body)).toMatchObject({ name: 'api' });
    } finally {
      s.child.kill('SIGTERM');
      await s.exited;
      await rm(dir, { recursive: true, force: true });
    }
  });
});
