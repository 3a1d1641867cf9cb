/**
 * The CA bundle probes trust (--probe-ca-file): parsing, and that it is used together with the
 * default roots, against real TLS A2A peers whose certificates a test CA signed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCaBundle, readCaBundle } from '../../../operator/probe/ca-bundle.ts';
import { createAddressPolicy, probeInterface } from '../../../operator/probe/index.ts';
import { startA2APeers, type A2APeers } from '../../support/a2a-peers.ts';
import { repoRoot } from '../../support/paths.ts';
import { createTestCa, type TestCa } from '../../support/tls-certs.ts';

let internal: TestCa;
let unrelated: TestCa;
let peers: A2APeers;
let work: string;
const policy = createAddressPolicy({ allowCidrs: ['127.0.0.1/32'] });

beforeAll(async () => {
  [internal, unrelated] = await Promise.all([createTestCa('internal CA'), createTestCa('other CA')]);
  peers = await startA2APeers({ tls: await internal.issue({ ips: ['127.0.0.1'] }) });
  work = mkdtempSync(join(tmpdir(), 'agentcard-ca-'));
});
afterAll(async () => {
  await peers?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const target = () => ({ url: peers.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });

describe('the probe CA bundle', () => {
  it('keeps every certificate of a PEM bundle and names what is wrong with a bad one', async () => {
    expect(parseCaBundle(`# trust-manager bundle\n${internal.cert}\n${unrelated.cert}`)).toHaveLength(2);
    expect(() => parseCaBundle('not a certificate')).toThrow('no PEM certificate in it');
    const broken = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----';
    expect(() => parseCaBundle(`${internal.cert}\n${broken}`)).toThrow('certificate 2 of 2 does not parse');
    await expect(readCaBundle(join(work, 'missing.pem'))).rejects.toThrow(
      `--probe-ca-file ${join(work, 'missing.pem')}: cannot read (ENOENT)`,
    );
  });

  it('a peer signed by a CA of the bundle is reachable; without it, a TLS error', async () => {
    const bundle = parseCaBundle(`${unrelated.cert}${internal.cert}`);
    expect(await probeInterface(target(), { timeoutMs: 5000, policy, ca: bundle })).toMatchObject({
      reachable: true,
      reason: 'Reachable',
    });
    expect(
      await probeInterface(target(), { timeoutMs: 5000, policy, ca: parseCaBundle(unrelated.cert) }),
    ).toMatchObject({ reachable: false, reason: 'TLSError' });
  });

  it('adds to the default roots instead of replacing them', async () => {
    // The default store includes NODE_EXTRA_CA_CERTS: a probe in a process that trusts the
    // internal CA that way, given a bundle of another CA, must still trust the internal one.
    writeFileSync(join(work, 'internal.pem'), internal.cert);
    const script = join(work, 'probe.ts');
    writeFileSync(
      script,
      `import { createAddressPolicy, probeInterface } from ${JSON.stringify(join(repoRoot, 'operator/probe/index.ts'))};
const policy = createAddressPolicy({ allowCidrs: ['127.0.0.1/32'] });
const result = await probeInterface(${JSON.stringify(target())}, { timeoutMs: 5000, policy, ca: [${JSON.stringify(unrelated.cert)}] });
process.stdout.write(result.reason);\n`,
    );
    const { stdout } = await promisify(execFile)(join(repoRoot, 'node_modules', '.bin', 'node'), [script], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(work, 'internal.pem') },
    });
    expect(stdout).toBe('Reachable');
  }, 30_000);
});
