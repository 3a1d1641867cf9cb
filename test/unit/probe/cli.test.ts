/** `agentcard probe` run as a real process against real peers on 127.0.0.1. */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobsFromManifest, parseDuration } from '../../../operator/cli/commands/probe.ts';
import { type A2APeers, startA2APeers } from '../../support/a2a-peers.ts';
import { type Impostor, okToEverything } from '../../support/impostors.ts';
import { agentcardBin } from '../../support/test-package.ts';

function cli(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [agentcardBin(), 'probe', ...args],
      { timeout: 20_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (stdin !== undefined) child.stdin!.end(stdin);
  });
}

let peers: A2APeers;
let fake: Impostor;
let dir: string;
const LOOPBACK = ['--allow-cidr', '127.0.0.0/8'];

beforeAll(async () => {
  [peers, fake] = await Promise.all([startA2APeers({ bearer: 'cli-token' }), okToEverything()]);
  dir = await mkdtemp(join(tmpdir(), 'probe-cli-'));
});
afterAll(async () => {
  await Promise.all([peers?.close(), fake?.close(), dir && rm(dir, { recursive: true })]);
});

function manifest(interfaces: object[], extra = ''): string {
  const list = interfaces.map((i) => `      - ${JSON.stringify(i)}`).join('\n');
  return `apiVersion: agentcard.dev/v1alpha1
kind: AgentCard
metadata:
  name: demo
spec:
  card:
    name: demo
    supportedInterfaces:
${list}
${extra}`;
}

describe('agentcard probe --url', () => {
  it('proves one interface with a header and prints the JSON shape of the issue', async () => {
    const r = await cli([
      '--url',
      peers.grpc,
      '--binding',
      'GRPC',
      '--header',
      'Authorization: Bearer cli-token',
      '--output',
      'json',
      ...LOOPBACK,
    ]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { results: Record<string, unknown>[] };
    expect(out.results).toHaveLength(1);
    expect(Object.keys(out.results[0]!)).toEqual([
      'url',
      'protocolBinding',
      'protocolVersion',
      'reachable',
      'reason',
      'message',
      'latencyMs',
    ]);
    expect(out.results[0]).toMatchObject({
      url: peers.grpc,
      protocolVersion: '1.0',
      reachable: true,
      reason: 'Reachable',
    });
    expect(r.stdout + r.stderr).not.toContain('cli-token');
  });

  it('exits 1 when not reachable: without the token, at 0.3 via --protocol-version, and when loopback is not allowed', async () => {
    const noToken = await cli(['--url', peers.jsonrpc, '--binding', 'JSONRPC', '-o', 'json', ...LOOPBACK]);
    expect(noToken.code).toBe(1);
    expect(JSON.parse(noToken.stdout).results[0]).toMatchObject({ reason: 'Unauthenticated' });
    const tenant = await cli([
      '--url',
      peers.rest,
      '--binding',
      'HTTP+JSON',
      '--tenant',
      'acme',
      '--protocol-version',
      '0.3',
      '--header',
      'Authorization: Bearer cli-token',
      ...LOOPBACK,
    ]);
    expect(tenant.code).toBe(0);
    expect(tenant.stdout).toMatch(/^ok +Reachable .*HTTP\+JSON 0\.3/m);
    const blocked = await cli(['--url', peers.jsonrpc, '--binding', 'JSONRPC']);
    expect(blocked.code).toBe(1);
    expect(blocked.stdout).toMatch(/FAIL Blocked/);
    expect(blocked.stdout).toMatch(/0\/1 reachable/);
    expect(blocked.stderr).toMatch(/--allow-cidr/);
    const impostor = await cli(['--url', fake.url, '--binding', 'HTTP+JSON', ...LOOPBACK]);
    expect(impostor.code).toBe(1);
    expect(impostor.stdout).toMatch(/BindingMismatch/);
  });
});

describe('agentcard probe -f', () => {
  it('probes every interface of every AgentCard document and skips other kinds', async () => {
    const file = join(dir, 'cards.yaml');
    await writeFile(
      file,
      [
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n',
        manifest(
          [
            { url: fake.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
            { url: fake.url, protocolBinding: 'WEBSOCKET', protocolVersion: '1.0' },
          ],
          '  probe:\n    timeout: 2s\n',
        ),
      ].join('---\n'),
    );
    const r = await cli(['-f', file, '-o', 'json', ...LOOPBACK]);
    expect(r.code).toBe(1);
    const results = JSON.parse(r.stdout).results as { reason: string }[];
    expect(results.map((x) => x.reason)).toEqual(['BindingMismatch', 'Unsupported']);
    expect(r.stderr).toMatch(/skipped kind ConfigMap/);
  });

  it('exits 0 when all probed interfaces are reachable (Unsupported does not fail the card); reads stdin', async () => {
    const card = JSON.stringify({
      name: 'plain card',
      supportedInterfaces: [{ url: fake.url, protocolBinding: 'custom-binding', protocolVersion: '1.0' }],
    });
    const r = await cli(['-f', '-', ...LOOPBACK], card);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/skip Unsupported/);
    expect(r.stdout).toMatch(/0\/0 reachable/);
  });

  it('notes credentials it cannot use', () => {
    const { jobs, notes } = jobsFromManifest(
      manifest(
        [{ url: 'https://a/', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        '  probe:\n    timeout: 1500ms\n    credentials: [{url: "https://a/"}]\n',
      ),
      'm.yaml',
    );
    expect(jobs).toEqual([
      {
        targets: [{ url: 'https://a/', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        timeoutMs: 1500,
      },
    ]);
    expect(notes[0]).toMatch(/credentials/);
  });
});

describe('agentcard probe and spec.audiences', () => {
  it('probes every distinct interface across the audiences, skipping probe: Disabled ones', () => {
    const { jobs } = jobsFromManifest(
      manifest(
        [{ url: 'http://a.ns.svc/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        `  audiences:
    - name: mesh
      hosts: [a.mesh]
    - name: partner
      hosts: [a.partner.example]
      baseURL: https://partner.example.com/a
    - name: public
      hosts: [a.example.com]
      baseURL: https://a.example.com
      probe: Disabled
`,
      ),
      'm.yaml',
    );
    expect(jobs[0]!.targets).toEqual([
      { url: 'http://a.ns.svc/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: 'https://partner.example.com/a/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ]);
  });
});

describe('usage errors exit 2 with one line', () => {
  it.each([
    [[], /nothing to probe/],
    [['--url', 'http://x'], /--url needs --binding/],
    [['--url', 'http://x', '--binding', 'JSONRPC', '--timeout', 'soon'], /'soon' is not a duration/],
    [['--url', 'http://x', '--binding', 'JSONRPC', '--header', 'novalue'], /Name: value/],
    [['--url', 'http://x', '--binding', 'JSONRPC', '--header', 'Bad Name: v'], /not a valid HTTP token/],
    [['--url', 'http://x', '--binding', 'JSONRPC', '--header', 'Host: evil'], /set by the probe itself/],
    [
      ['--url', 'http://x', '--binding', 'JSONRPC', '--allow-cidr', '10.0.0.0/40'],
      /--allow-cidr: '10.0.0.0\/40'/,
    ],
    [['--url', 'http://x', '--binding', 'JSONRPC', '-o', 'yaml'], /--output must be text or json/],
    [['--url', 'http://x', '-f', 'x.yaml'], /either -f MANIFEST or --url/],
    [['-f', 'x.yaml', '--tenant', 't'], /--tenant goes with --url/],
    [['--bogus'], /Unknown option '--bogus'/],
    [['-f', '/does/not/exist.yaml'], /cannot read \(ENOENT\)/],
  ])('%j', async (args, message) => {
    const r = await cli(args as string[]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toBe('');
  });

  it('bad manifests name the problem', async () => {
    const cases: [string, RegExp][] = [
      ['kind: AgentCard\nspec: {card: {supportedInterfaces: []}}\n', /spec\.card\.supportedInterfaces/],
      ['kind: AgentCard\nspec: {card: {supportedInterfaces: [{url: 1}]}}\n', /supportedInterfaces\.0\.url/],
      ['just: text\n', /neither an AgentCard manifest nor an Agent Card/],
      ['a: [1, 2\n', /bad\.yaml/],
      [
        manifest(
          [{ url: 'https://a/', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
          '  probe:\n    timeout: fast\n',
        ),
        /'fast' is not a duration/,
      ],
    ];
    for (const [text, message] of cases) {
      const file = join(dir, 'bad.yaml');
      await writeFile(file, text);
      const r = await cli(['-f', file]);
      expect(r.code, text).toBe(2);
      expect(r.stderr).toMatch(message);
    }
  });

  it('parses durations', () => {
    expect(parseDuration('5s')).toBe(5000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('1m30s')).toBe(90_000);
    expect(parseDuration('1.5s')).toBe(1500);
    for (const bad of ['', '5', 's', '0s', '5 s', '-1s', '5sx'])
      expect(() => parseDuration(bad), bad).toThrow();
  });
});
