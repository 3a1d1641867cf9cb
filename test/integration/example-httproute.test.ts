/**
 * examples/gateway-api/httproute-well-known.yaml against the Gateway API's own schema: the
 * HTTPRoute CRD of the Gateway API standard channel (from the sigs.k8s.io/gateway-api module at
 * a pinned version, its hash checked) is installed in the real API server, and the example must
 * pass a server-side dry run with strict field validation, which refuses any field the schema
 * does not have. The same check refuses a copy with an invented field, so it can fail.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigPath, useTestNamespace } from '../support/cluster.ts';
import { goModuleDir } from '../support/go-tools.ts';
import { repoRoot } from '../support/paths.ts';
import { runTool } from '../support/tools.ts';

/** Gateway API v1.4.1 (the standard channel's HTTPRoute is gateway.networking.k8s.io/v1). */
const GATEWAY_API = {
  module: 'sigs.k8s.io/gateway-api',
  version: 'v1.4.1',
  h1: 'h1:NPxFutNkKNa8UfLd2CMlEuhIPMQgDQ6DXNKG9sHbJU8=',
};
const example = join(repoRoot, 'examples', 'gateway-api', 'httproute-well-known.yaml');
const ns = useTestNamespace('httproute-example');
const tmp = mkdtempSync(join(tmpdir(), 'agentcard-httproute-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const kubectl = (args: string[]) =>
  runTool('kubectl', args, { kubeconfig: kubeconfigPath(), timeoutMs: 120_000 });

beforeAll(async () => {
  const dir = await goModuleDir(GATEWAY_API.module, GATEWAY_API.version, GATEWAY_API.h1);
  const crd = join(dir, 'config', 'crd', 'standard', 'gateway.networking.k8s.io_httproutes.yaml');
  // Server-side: the CRD is too large for client-side apply's last-applied annotation.
  const apply = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', crd]);
  expect(apply.code, apply.stderr).toBe(0);
  const wait = await kubectl([
    'wait',
    '--for=condition=Established',
    'crd/httproutes.gateway.networking.k8s.io',
    '--timeout=60s',
  ]);
  expect(wait.code, wait.stderr).toBe(0);
}, 600_000);
// examples.test.ts checks that the example is refused where the Gateway API CRDs are missing, as
// on a plain cluster: leave the control plane without them, also for a later run that reuses it.
afterAll(async () => {
  await kubectl([
    'delete',
    'crd',
    'httproutes.gateway.networking.k8s.io',
    '--ignore-not-found',
    '--wait=false',
  ]);
});

const dryRun = (file: string) =>
  kubectl(['apply', '--dry-run=server', '--validate=strict', '-n', ns.name, '-f', file]);

describe('the Gateway API example', () => {
  it('is a valid HTTPRoute of the Gateway API', async () => {
    const r = await dryRun(example);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^httproute\.gateway\.networking\.k8s\.io\/support-agent (created|configured) \(server dry run\)$/m,
    );
  });

  it('a field the schema does not have is refused (the check can fail)', async () => {
    const copy = join(tmp, 'invented-field.yaml');
    writeFileSync(
      copy,
      readFileSync(example, 'utf8').replace(
        '          port: 8095\n',
        '          port: 8095\n          servicePort: agent-card\n',
      ),
    );
    const r = await dryRun(copy);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/unknown field "spec\.rules\[0\]\.backendRefs\[0\]\.servicePort"/);
  });
});
