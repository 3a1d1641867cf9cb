/**
 * Hostile servers on 127.0.0.1: each must end in a clear error within the limits, never a hang,
 * a crash or an unbounded read. Limits are set small so the test is quick; the defaults are
 * the same code with larger numbers.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2A_AGENT_CARD_MEDIA_TYPE, AI_CATALOG_MEDIA_TYPE } from '../../../operator/catalog/document.ts';
import { discover } from '../../../operator/discover/discover.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { agentcard } from '../../support/cli.ts';
import { type Impostor, endlessBody, redirectTo, silent } from '../../support/impostors.ts';

const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
const limits = { timeoutMs: 1000, maxBytes: 64 * 1024, maxDepth: 4 };

interface Hostile {
  origin: string;
  requests: string[];
  close(): Promise<void>;
}

/** One node:http server with a handler per path; `requests` records what was asked. */
async function hostile(
  handler: (path: string, res: http.ServerResponse, origin: string) => void,
): Promise<Hostile> {
  const requests: string[] = [];
  let origin = '';
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    req.resume();
    handler(req.url ?? '/', res, origin);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let server: Hostile;
let endless: Impostor;
let toMetadata: Impostor;
let mute: Impostor;

beforeAll(async () => {
  server = await hostile((path, res, origin) => {
    if (path === '/claims-1gib.json') {
      // Claims 1 GiB, sends a little, then idles: the claim alone must be enough to refuse.
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1024 ** 3) });
      res.write('{"name":');
      return;
    }
    if (path === '/back-tomorrow.json') {
      res.writeHead(503, { 'retry-after': '99999' }).end();
      return;
    }
    if (path === '/back-in-9999.json') {
      res.writeHead(429, { 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' }).end();
      return;
    }
    if (path === '/back-in-1s.json') {
      res.writeHead(503, { 'retry-after': '1' }).end();
      return;
    }
    if (path === '/html.json') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Welcome</body></html>');
      return;
    }
    if (path === '/trickle.json' || path.startsWith('/trickle/')) {
      // One byte every 100 ms, forever: only a deadline on the whole answer stops it.
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 100);
      res.on('close', () => clearInterval(timer));
      return;
    }
    const deep = /^\/deep\/(\d+)\.json$/.exec(path);
    if (deep) {
      // Every catalog nests the next one, without end.
      const next = Number(deep[1]) + 1;
      res.writeHead(200, { 'content-type': 'application/ai-catalog+json' }).end(
        JSON.stringify({
          specVersion: '1.0',
          entries: [
            {
              identifier: `urn:deep:${next}`,
              type: AI_CATALOG_MEDIA_TYPE,
              url: `${origin}/deep/${next}.json`,
            },
          ],
        }),
      );
      return;
    }
    if (path === '/deep-json.json') {
      // Small, but 20,000 levels deep in an inline card: the schema's recursive walk would overflow the stack.
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          `{"specVersion":"1.0","entries":[{"identifier":"urn:x","type":"${A2A_AGENT_CARD_MEDIA_TYPE}","data":{"name":` +
            '['.repeat(20_000) +
            ']'.repeat(20_000) +
            '}}]}',
        );
      return;
    }
    if (path === '/slow-entries.json') {
      const entries = Array.from({ length: 5 }, (_, i) => ({
        identifier: `urn:s:${i}`,
        type: A2A_AGENT_CARD_MEDIA_TYPE,
        url: `${origin}/trickle/${i}.json`,
      }));
      res.writeHead(200).end(JSON.stringify({ specVersion: '1.0', entries }));
      return;
    }
    if (path === '/wide.json') {
      // A catalog with many entries: the document limit stops it.
      const entries = Array.from({ length: 50 }, (_, i) => ({
        identifier: `urn:w:${i}`,
        type: A2A_AGENT_CARD_MEDIA_TYPE,
        url: `${origin}/missing/${i}.json`,
      }));
      res.writeHead(200).end(JSON.stringify({ specVersion: '1.0', entries }));
      return;
    }
    res.writeHead(404).end();
  });
  [endless, toMetadata, mute] = await Promise.all([
    endlessBody(),
    redirectTo('http://169.254.169.254/latest/meta-data'),
    silent(),
  ]);
});

afterAll(async () => {
  await Promise.all([server?.close(), endless?.close(), toMetadata?.close(), mute?.close()]);
});

async function only(url: string, extra: Partial<Parameters<typeof discover>[0]['limits']> = {}) {
  const started = performance.now();
  const report = await discover({ urls: [url], policy, limits: { ...limits, ...extra } });
  return { report, ms: performance.now() - started };
}

describe('hostile servers', () => {
  it('an endless body stops at the size limit', async () => {
    const { report, ms } = await only(`${endless.url}/card.json`);
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'too-large', message: 'the body is larger than the 64 KiB limit' }),
    ]);
    expect(ms).toBeLessThan(3000);
    expect(endless.bytesSent).toBeLessThan(16 * 1024 * 1024); // stopped reading; the server could not push it all
  });

  it('a 1 GiB Content-Length is refused before reading', async () => {
    const { report, ms } = await only(`${server.origin}/claims-1gib.json`);
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'too-large',
        message: 'the body claims 1073741824 bytes, over the 64 KiB limit',
      }),
    ]);
    expect(ms).toBeLessThan(900); // not waiting for the deadline
  });

  it('endless nesting stops at the depth limit', async () => {
    const { report } = await only(`${server.origin}/deep/0.json`);
    expect(report.catalogs).toHaveLength(5); // the first one and 4 nested
    expect(report.errors).toEqual([
      expect.objectContaining({
        url: `${server.origin}/deep/5.json`,
        code: 'depth',
        message: 'nested deeper than 4 catalogs (--max-depth); not followed',
      }),
    ]);
    expect(server.requests.filter((r) => r.startsWith('/deep/'))).toEqual([
      '/deep/0.json',
      '/deep/1.json',
      '/deep/2.json',
      '/deep/3.json',
      '/deep/4.json',
    ]);
  });

  it('deeply nested JSON is refused without a stack overflow', async () => {
    const { report } = await only(`${server.origin}/deep-json.json`);
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'too-deep', message: 'the JSON nests deeper than 64 levels' }),
    ]);
  });

  it('a redirect to a metadata address is not followed', async () => {
    const { report } = await only(`${toMetadata.url}/.well-known/agent-card.json`);
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'redirect',
        message:
          'HTTP 307 redirect to http://169.254.169.254/latest/meta-data/.well-known/agent-card.json not followed (discovery follows no redirects)',
      }),
    ]);
  });

  it('a metadata address itself is refused, whatever --allow-cidr says', async () => {
    const wide = createAddressPolicy({ allowCidrs: ['0.0.0.0/0'] });
    const report = await discover({
      urls: ['http://169.254.169.254/latest/meta-data'],
      policy: wide,
      limits,
    });
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'blocked',
        message:
          'refused by the address policy: 169.254.169.254 is link-local/cloud metadata (169.254.0.0/16), always refused',
      }),
    ]);
  });

  it('loopback is refused unless --allow-cidr covers it', async () => {
    const report = await discover({
      urls: [`${server.origin}/html.json`],
      policy: createAddressPolicy(),
      limits,
    });
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'blocked',
        message: expect.stringContaining('is loopback (127.0.0.0/8)'),
      }),
    ]);
    expect(server.requests).not.toContain('/html.json');
  });

  it('a non-JSON body says what it was', async () => {
    const { report } = await only(`${server.origin}/html.json`);
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'not-json', message: 'the body is not JSON (content-type text/html)' }),
    ]);
  });

  it('a slow trickle ends at the request deadline', async () => {
    const { report, ms } = await only(`${server.origin}/trickle.json`);
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'timeout', message: 'no complete answer within 1s' }),
    ]);
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(2500);
  });

  it('a server that never answers ends at the request deadline', async () => {
    const { report, ms } = await only(`${mute.url}/card.json`);
    expect(report.errors).toEqual([expect.objectContaining({ code: 'timeout' })]);
    expect(ms).toBeLessThan(2500);
  });

  it('a Retry-After of a day, or a date far away, is not waited for', async () => {
    const far = await only(`${server.origin}/back-tomorrow.json`, { deadlineMs: 120_000 });
    expect(far.report.errors).toEqual([
      expect.objectContaining({
        code: 'http',
        message:
          'HTTP 503 after 1 attempt: Retry-After: 99999 asks for a wait longer than 30s, the longest waited',
      }),
    ]);
    const later = await only(`${server.origin}/back-in-9999.json`, { deadlineMs: 120_000 });
    expect(later.report.errors).toEqual([
      expect.objectContaining({
        code: 'http',
        message: expect.stringMatching(
          /^HTTP 429 after 1 attempt: Retry-After: Fri, 31 Dec 9999 23:59:59 GMT asks for a wait longer/,
        ),
      }),
    ]);
    expect(server.requests.filter((r) => r.startsWith('/back-'))).toEqual([
      '/back-tomorrow.json',
      '/back-in-9999.json',
    ]);
  });

  it("a Retry-After past the run's deadline is not waited for", async () => {
    const { report } = await only(`${server.origin}/back-in-1s.json`, { deadlineMs: 500 });
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'http',
        message: "HTTP 503 after 1 attempt: Retry-After: 1 asks for a wait past the run's deadline",
      }),
    ]);
    expect(server.requests.filter((r) => r === '/back-in-1s.json')).toHaveLength(1);
  });

  it('the document limit stops a wide catalog, once', async () => {
    const { report } = await only(`${server.origin}/wide.json`, { maxDocuments: 10 });
    const codes = report.errors.map((e) => e.code);
    expect(codes.filter((c) => c === 'limit')).toHaveLength(1);
    expect(codes.filter((c) => c === 'not-found')).toHaveLength(9); // 10 documents: the catalog and 9 cards
    expect(report.errors.find((e) => e.code === 'limit')!.message).toBe(
      'stopped after 10 documents (--max-documents); the rest was not fetched',
    );
  });

  it('the run deadline bounds everything', async () => {
    const { report, ms } = await only(`${server.origin}/trickle.json`, {
      timeoutMs: 10_000,
      deadlineMs: 800,
    });
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'deadline',
        message: "the run's deadline passed; the rest was not fetched",
      }),
    ]);
    expect(ms).toBeLessThan(2000);
  });

  it('after the run deadline, one error says so (not one per document)', async () => {
    const { report } = await only(`${server.origin}/slow-entries.json`, { deadlineMs: 500, timeoutMs: 5000 });
    expect(server.requests.filter((r) => r.startsWith('/trickle/'))).toHaveLength(5); // all five were waiting
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'deadline',
        message: "the run's deadline passed; the rest was not fetched",
      }),
    ]);
  });

  it('the CLI reports them all, one line each, exit 1, no stack trace', async () => {
    const r = await agentcard([
      'discover',
      `${endless.url}/card.json`,
      `${server.origin}/claims-1gib.json`,
      `${server.origin}/html.json`,
      `${toMetadata.url}/card.json`,
      `${server.origin}/trickle.json`,
      '--allow-cidr',
      '127.0.0.0/8',
      '--timeout',
      '1s',
      '--max-bytes',
      '65536',
    ]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toBe('');
    for (const text of [
      'too-large: the body is larger',
      'too-large: the body claims 1073741824 bytes',
      'not-json: the body is not JSON',
      'redirect: HTTP 307 redirect to http://169.254.169.254',
      'timeout: no complete answer within 1s',
    ]) {
      expect(r.stdout).toContain(text);
    }
    expect(r.stdout).toMatch(/0 cards, 0 ok, 0 catalogs, 5 errors\n$/);
    expect(r.stdout).not.toMatch(/\n\s+at /);
  });
});
