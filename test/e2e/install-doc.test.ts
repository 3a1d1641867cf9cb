/**
 * docs/install.md, run as written on the real node: every shell block the page marks to run
 * (test/support/install-doc.ts), in the page's order, from the images built without a registry
 * (`npm run images`, which finds the images this run's global setup built in the machine cache)
 * through the first AgentCard, its signing keys, fetching and verifying the served card, the
 * upgrade and the uninstall. Nothing is added to the commands: blocks run with bash in the
 * checkout, with KUBECONFIG set to the node cluster's, kubectl, helm and Node.js 24 on PATH, and
 * npm's global prefix in a folder of the test (`npm install -g` of the CLI the page packs); the
 * `ctr` imports run inside the node. What the page skips, and why, is said in its source.
 *
 * Besides each block's exit status, the test checks what a reader is told to look at: the
 * imported names, the served card verified, no empty `Missing:` line in `kubectl describe`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execInNode, kubectl, nodeKubeconfig } from '../node/control.ts';
import { installDocBlocks, type InstallDocBlock } from '../support/install-doc.ts';
import { repoRoot } from '../support/paths.ts';
import { CHART_CRD_NAMES } from '../../build/chart-crds.ts';

const state = inject('nodeCluster');
const k = (...args: string[]) => kubectl(state, args);
const blocks = installDocBlocks();
const BLOCK_TIMEOUT_MS = 300_000;

let prefix: string;
let topLevelBefore: Set<string>;

/** Runs a block with bash in the checkout; kills whatever it left running (a port-forward). */
function onHost(block: InstallDocBlock): Promise<{ code: number | null; output: string }> {
  const env = {
    ...process.env,
    KUBECONFIG: nodeKubeconfig,
    npm_config_prefix: prefix,
    PATH: [join(prefix, 'bin'), dirname(process.execPath), state.toolsDir, process.env.PATH ?? ''].join(':'),
  };
  return new Promise((resolve) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', block.code], {
      cwd: repoRoot,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      output += `\n(timed out after ${BLOCK_TIMEOUT_MS / 1000} s)`;
      killGroup();
    }, BLOCK_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      killGroup();
      resolve({ code, output });
    });
  });
}

/** Runs a block inside the node (its mount and network namespaces), with the node's `ctr` on PATH. */
async function onNode(block: InstallDocBlock): Promise<{ code: number | null; output: string }> {
  try {
    const output = await execInNode(
      state,
      'env',
      [
        `PATH=${state.nodeBinDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
        'bash',
        '-e',
        '-o',
        'pipefail',
        '-c',
        `cd ${repoRoot}\n${block.code}`,
      ],
      BLOCK_TIMEOUT_MS,
    );
    return { code: 0, output };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; message: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      output: `${e.stdout ?? ''}${e.stderr ?? e.message}`,
    };
  }
}

/** What a reader is told to look at in a block's output, beyond its exit status. */
function checkOutput(block: InstallDocBlock, output: string): void {
  if (block.code.includes('ctr -n k8s.io images ls')) {
    expect(output).toMatch(/^ghcr\.io\/agentcard-dev\/agentcard-operator:\S+$/m);
    expect(output).toMatch(/^ghcr\.io\/agentcard-dev\/agentcard-operator@sha256:[0-9a-f]{64}$/m);
    expect(output).toMatch(/nginx-unprivileged@sha256:[0-9a-f]{64}$/m);
  }
  if (block.code.includes('kubectl describe agentcard')) {
    expect(output).toMatch(/support-agent\s+True\s+True\s+3\/3/);
    expect(output).toMatch(/Pods Requesting:\s+1/);
    // status.serving.missing is left out when empty, so describe prints no empty line for it.
    expect(output).not.toMatch(/^\s*Missing:\s*$/m);
  }
  if (block.code.includes('kubectl port-forward')) {
    expect(output).toMatch(/^HTTP\/1\.1 200 OK/m);
    expect(output).toMatch(/verified/);
  }
  if (block.code.includes('kubectl run card-check')) expect(output).toMatch(/1 card, 1 ok/);
  if (block.code.includes('kubectl run webhook-check'))
    expect(output).toMatch(/^the webhook injects the sidecar$/m);
}

describe('docs/install.md on the node, as written', () => {
  beforeAll(() => {
    prefix = mkdtempSync(join(tmpdir(), 'agentcard-install-doc-'));
    topLevelBefore = new Set(readdirSync(repoRoot));
  });

  afterAll(async () => {
    // What the page's last blocks remove when they ran, and what it leaves to the reader.
    const quiet = (...args: string[]) => k(...args).catch(() => undefined);
    await quiet('delete', 'pod', 'card-check', '--ignore-not-found', '--wait=false');
    await quiet('delete', '-f', join(repoRoot, 'examples', 'agentcard-signed.yaml'), '--ignore-not-found');
    await quiet('delete', '-f', join(repoRoot, 'examples', 'demo-agent.yaml'), '--ignore-not-found');
    await quiet('delete', 'secret', 'support-agent-signing', '--ignore-not-found');
    await quiet('delete', 'namespace', 'agents', '--ignore-not-found', '--timeout=120s');
    await new Promise<void>((resolve) =>
      spawn(join(state.toolsDir, 'helm'), [
        `--kubeconfig=${nodeKubeconfig}`,
        'uninstall',
        'agentcard-operator',
        '--namespace',
        'agentcard-system',
        '--ignore-not-found',
      ]).on('close', () => resolve()),
    );
    await quiet('delete', 'crd', ...CHART_CRD_NAMES, '--ignore-not-found');
    await quiet('delete', 'namespace', 'agentcard-system', '--ignore-not-found', '--timeout=120s');
    // The files the page writes in the checkout (keys, JWKS); out/ and dist/ are ignored by git.
    for (const name of readdirSync(repoRoot)) {
      if (!topLevelBefore.has(name) && statSync(join(repoRoot, name)).isFile()) rmSync(join(repoRoot, name));
    }
    rmSync(prefix, { recursive: true, force: true });
  });

  let failed: string | undefined;
  for (const block of blocks.filter((b) => b.where !== 'skip')) {
    const first = block.code.split('\n').find((l) => l.trim() && !l.trim().startsWith('#'))!;
    it(
      `line ${block.line} (${block.where}): ${first.trim()}`,
      async (ctx) => {
        if (failed) ctx.skip(`an earlier block failed: ${failed}`);
        const started = Date.now();
        const { code, output } = block.where === 'node' ? await onNode(block) : await onHost(block);
        process.stderr.write(
          `[install.md] line ${block.line}: exit ${code} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
        );
        try {
          expect(code, `docs/install.md:${block.line}\n${block.code}\n---\n${output.slice(-4000)}`).toBe(0);
          checkOutput(block, output);
        } catch (err) {
          failed = `line ${block.line}`;
          throw err;
        }
      },
      BLOCK_TIMEOUT_MS + 30_000,
    );
  }
});
