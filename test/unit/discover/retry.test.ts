/**
 * A server that is not ready yet (503) or busy (429) and says when to come back (Retry-After):
 * discover asks again then, a bounded number of times, as our own catalog server needs in its
 * first minute. Real node:http servers on 127.0.0.1; waits of 1 s keep it short.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { A2A_AGENT_CARD_MEDIA_TYPE } from '../../../operator/catalog/document.ts';
import { discover } from '../../../operator/discover/discover.ts';
import { Fetcher, FetchError } from '../../../operator/discover/fetch.ts';
import { DISCOVER_RETRY } from '../../../operator/discover/retry.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { minimalCard } from '../../support/cards.ts';
import { agentcard } from '../../support/cli.ts';

const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });

/** Per path: the answers to give in turn (the last one repeats); `requests` records every path asked. */
type Answer = { status: number; headers?: Record<string, string>; body?: string };
const script = new Map<string, Answer[]>();
const requests: string[] = [];
let origin = '';
let server: http.Server;

const unavailable = (retryAfter?: string, status = 503): Answer => ({
  status,
  headers: retryAfter === undefined ? {} : { 'retry-after': retryAfter },
});
const catalog = (): Answer => ({
  status: 200,
  headers: { 'content-type': 'application/ai-catalog+json' },
  body: JSON.stringify({
    specVersion: '1.0',
    entries: [{ identifier: 'urn:retry:card', type: A2A_AGENT_CARD_MEDIA_TYPE, url: `${origin}/card.json` }],
  }),
});
const card = (): Answer => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ ...minimalCard(), name: 'Patient Agent' }),
});

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push(path);
    req.resume();
    const answers = script.get(path);
    const answer = answers && (answers.length > 1 ? answers.shift()! : answers[0]!);
    if (!answer) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

beforeEach(() => {
  script.clear();
  requests.length = 0;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const run = (url: string) => discover({ urls: [url], policy, limits: { timeoutMs: 2000 } });

describe('Retry-After on 503 and 429', () => {
  it('a catalog that answers 503 Retry-After: 1 once, and a card 429 once, is read', async () => {
    script.set('/.well-known/ai-catalog.json', [unavailable('1'), catalog()]);
    script.set('/card.json', [unavailable('1', 429), card()]);
    const report = await run(origin);
    expect(report.errors).toEqual([]);
    expect(report.catalogs).toHaveLength(1);
    expect(report.cards.map((c) => c.name)).toEqual(['Patient Agent']);
    expect(requests).toEqual([
      '/.well-known/ai-catalog.json',
      '/.well-known/ai-catalog.json',
      '/card.json',
      '/card.json',
    ]);
    expect(report.stats.requests).toBe(4);
  });

  it('a server that keeps answering 503 is asked 10 times, and the error says so', async () => {
    script.set('/card.json', [unavailable('0')]);
    const report = await run(`${origin}/card.json`);
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'http',
        message: 'HTTP 503 after 10 attempts: the last answer had Retry-After: 0',
      }),
    ]);
    expect(requests).toEqual(Array(10).fill('/card.json'));
  });

  it('a Retry-After over the 30 s cap fails at once, naming it', async () => {
    script.set('/card.json', [unavailable('31')]);
    const report = await run(`${origin}/card.json`);
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'http',
        message:
          'HTTP 503 after 1 attempt: Retry-After: 31 asks for a wait longer than 30s, the longest waited',
      }),
    ]);
    expect(requests).toEqual(['/card.json']);
  });

  it("an origin's catalog answering 429 longer than the cap means no catalog: its card is read", async () => {
    script.set('/.well-known/ai-catalog.json', [unavailable('60', 429)]);
    script.set('/.well-known/agent-card.json', [card()]);
    const report = await run(origin);
    expect(report.errors).toEqual([]);
    expect(report.cards.map((c) => c.name)).toEqual(['Patient Agent']);
    expect(requests).toEqual(['/.well-known/ai-catalog.json', '/.well-known/agent-card.json']);
  });

  it('without Retry-After a 503 fails as before, with one request', async () => {
    script.set('/card.json', [unavailable()]);
    const report = await run(`${origin}/card.json`);
    expect(report.errors).toEqual([expect.objectContaining({ code: 'http', message: 'HTTP 503' })]);
    expect(requests).toEqual(['/card.json']);
  });

  // Without the abort the wait would last 25 s: the test's own 10 s timeout catches that.
  it('the run ending ends a wait', { timeout: 10_000 }, async () => {
    script.set('/card.json', [unavailable('25')]);
    const run = new AbortController();
    const fetcher = new Fetcher({
      policy,
      maxBytes: 1024,
      totalBytes: 1024,
      timeoutMs: 2000,
      signal: run.signal,
      retry: DISCOVER_RETRY,
    });
    try {
      const got = fetcher.get(`${origin}/card.json`).catch((err: unknown) => err);
      await expect.poll(() => requests.length).toBe(1);
      run.abort();
      const err = await got;
      expect(err).toBeInstanceOf(FetchError);
      expect(err).toMatchObject({ code: 'deadline', message: "the run's deadline passed" });
      expect(requests).toEqual(['/card.json']);
    } finally {
      await fetcher.close();
    }
  });

  it('agentcard discover waits for a catalog server that is starting', async () => {
    script.set('/.well-known/ai-catalog.json', [unavailable('1'), catalog()]);
    script.set('/card.json', [card()]);
    const r = await agentcard(['discover', origin, '--allow-cidr', '127.0.0.0/8']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('Patient Agent');
    expect(r.stdout).toMatch(/1 cards?, 0 ok, 1 catalogs?, 0 errors\n$/);
  });
});
