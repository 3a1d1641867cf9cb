/**
 * Runs the real helm binary on the chart and parses what it renders, for the chart tests.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ensureTools, helmPath } from '../../support/tools.ts';
import { repoRoot } from '../../support/paths.ts';

export const chartDir = join(repoRoot, 'helm', 'agentcard-operator');

// The real helm 4 binary the control plane's tools module pins (unpacked on first use).
await ensureTools((line) => process.stderr.write(`${line}\n`));

export function helmBin(): string {
  return helmPath();
}

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [key: string]: unknown;
};

export type HelmResult = { code: number; stdout: string; stderr: string };

/** Runs helm with `args`; never throws on a non-zero exit (tests assert on it). */
export function helm(args: string[]): Promise<HelmResult> {
  return new Promise((resolvePromise, reject) => {
    execFile(helmBin(), args, { maxBuffer: 16 * 1024 * 1024, env: helmEnv() }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolvePromise({ code: err ? Number(err.code) : 0, stdout, stderr });
    });
  });
}

/** Keeps helm from reading or writing the user's own configuration and caches. */
function helmEnv(): NodeJS.ProcessEnv {
  const home = join(tmpdir(), 'agentcard-helm-home');
  return {
    ...process.env,
    HELM_CONFIG_HOME: join(home, 'config'),
    HELM_CACHE_HOME: join(home, 'cache'),
    HELM_DATA_HOME: join(home, 'data'),
  };
}

/** Runs `helm <verb> ... -f values.json` with the values written to a temp file. */
export async function helmWithValues(args: string[], values: Record<string, unknown>): Promise<HelmResult> {
  const dir = mkdtempSync(join(tmpdir(), 'agentcard-values-'));
  try {
    const file = join(dir, 'values.json');
    writeFileSync(file, JSON.stringify(values));
    return await helm([...args, '-f', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const RELEASE = 'ac';
export const NAMESPACE = 'agentcard-system';

/** `helm template` of the chart with `values`; fails the test on a render error. */
export async function render(values: Record<string, unknown> = {}, extra: string[] = []): Promise<Rendered> {
  const result = await helmWithValues(
    ['template', RELEASE, chartDir, '--namespace', NAMESPACE, ...extra],
    values,
  );
  if (result.code !== 0) throw new Error(`helm template failed: ${result.stderr.trim()}`);
  return new Rendered(result.stdout);
}

export class Rendered {
  readonly text: string;
  readonly objects: K8sObject[];
  constructor(text: string) {
    this.text = text;
    this.objects = parseAllDocuments(text)
      .map((doc) => {
        if (doc.errors.length) throw new Error(`rendered YAML does not parse: ${doc.errors[0]!.message}`);
        return doc.toJS() as K8sObject | null;
      })
      .filter((o): o is K8sObject => o !== null);
  }
  all(kind: string): K8sObject[] {
    return this.objects.filter((o) => o.kind === kind);
  }
  maybe(kind: string, name?: string): K8sObject | undefined {
    return this.objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  }
  one(kind: string, name?: string): K8sObject {
    const found = this.objects.filter(
      (o) => o.kind === kind && (name === undefined || o.metadata.name === name),
    );
    if (found.length !== 1)
      throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, rendered ${found.length}`);
    return found[0]!;
  }
}
