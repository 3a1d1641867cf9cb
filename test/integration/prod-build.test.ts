/**
 * The container image, without a container engine: its files are laid out the way the
 * Dockerfile lays them out (the build stage's RUN lines bundle the sources), and its ENTRYPOINT
 * runs on Node.js 24 under Node's permission model, which stands in for the image's limits: the
 * file system is read-only but for /tmp, and no child process (so no shell) can be started.
 * A module the bundle misses, or a file the Dockerfile forgets to copy, fails here.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api } from '@kubernetes/client-node';
import { buildImageLayout, parseDockerfile, type ImageLayout } from './prod-build-image.ts';
import { node24 } from '../support/node-versions.ts';
import { repoRoot } from '../support/paths.ts';
import { createTestNamespace, kubeConfig, kubeconfigPath, type TestNamespace } from '../support/cluster.ts';
import { applyYaml, waitForCrdEstablished } from '../support/apply.ts';
import { freePort } from '../support/ports.ts';

let out: string;
let image: ImageLayout;
let node: string;
let writable: string;

beforeAll(() => {
  node = node24();
  out = mkdtempSync(join(tmpdir(), 'agentcard-image-'));
  writable = join(out, 'tmp');
  mkdirSync(writable);
  image = buildImageLayout(out, (dir) => {
    // The build stage's RUN lines, each `&&` step in turn. `npm ci` gives the tree the
    // lockfile pins, which is this checkout's node_modules (linked instead of installed again);
    // the typecheck is `npm test`'s first step over the same sources, so it is not repeated here.
    symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
    for (const step of buildStageSteps()) {
      if (/^npm ci\b/.test(step) || /tsc --noEmit/.test(step)) continue;
      const result = spawnSync('sh', ['-c', step], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ''}` },
        timeout: 180_000,
      });
      if (result.status !== 0) throw new Error(`RUN ${step} failed:\n${result.stderr.slice(-2000)}`);
    }
  });
  // The runtime stage's RUN lines (exec form: the image's node and a script in it), as the
  // runtime user would run them.
  for (const argv of image.runtimeRuns) {
    const [bin, ...args] = argv;
    expect(bin).toMatch(/\/node$/);
    const inImage = args.map((a) => (a.startsWith('/') ? join(image.rootDir, a) : a));
    const r = spawnSync(node, inImage, { env: imageEnv(), encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) throw new Error(`RUN ${argv.join(' ')} failed: ${r.stderr}`);
  }
}, 300_000);

afterAll(() => {
  if (out) rmSync(out, { recursive: true, force: true });
});

/** The build stage's RUN commands, split at `&&`, read before the layout exists. */
function buildStageSteps(): string[] {
  const stages = parseDockerfile(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
  const build = stages.find((s) => s.name === 'build')!;
  return build.instructions
    .filter((i) => i.op === 'RUN')
    .flatMap((i) => i.args.join(' ').split('&&'))
    .map((step) => step.trim())
    .filter(Boolean);
}

/** The image's command line: ENTRYPOINT + args, with its node replaced by Node.js 24. */
function imageArgv(args: string[], readable: string[] = []): [string, string[]] {
  const [bin, ...entry] = image.entrypoint;
  expect(bin).toMatch(/\/node$/);
  const app = join(image.rootDir, image.workdir);
  const permission = [
    '--permission',
    ...[app + '/', ...readable].map((path) => `--allow-fs-read=${path}`),
    `--allow-fs-write=${writable}/`,
  ];
  // Absolute paths in the ENTRYPOINT are paths inside the image.
  const inImage = entry.map((a) => (a.startsWith('/') ? join(image.rootDir, a) : a));
  return [node, [...permission, ...inImage, ...args]];
}

function runImage(args: string[], readable: string[] = []) {
  const [bin, argv] = imageArgv(args, readable);
  return spawnSync(bin, argv, {
    cwd: join(image.rootDir, image.workdir),
    env: imageEnv(),
    encoding: 'utf8',
    timeout: 60_000,
  });
}

/** The image's ENV, its absolute paths mapped into the layout. */
function imageEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(image.env).map(([k, v]) => [k, v.startsWith('/') ? join(image.rootDir, v) : v]),
  );
  return { ...env, PATH: '/nonexistent', HOME: '/nonexistent', TMPDIR: writable };
}

describe('the Dockerfile', () => {
  it('builds in stages: installs, typechecks, and bundles', () => {
    expect(image.buildRuns.join('\n')).toMatch(/npm ci\b/);
    expect(image.buildRuns.join('\n')).toMatch(/tsc --noEmit/);
    expect(image.buildRuns.join('\n')).toMatch(/build\/bundle\.ts/);
  });

  it('runs as a numeric non-root user with `agentcard operator` by default', () => {
    expect(image.user).toMatch(/^[1-9][0-9]*(:[0-9]+)?$/);
    expect(image.entrypoint.slice(1)).toEqual([`${image.workdir}/bin/agentcard.js`]);
    expect(image.cmd).toEqual(['operator']);
  });

  it('.dockerignore sends exactly what the COPY lines need as the build context', () => {
    const sent = (path: string) =>
      dockerignoreIncludes(readFileSync(join(repoRoot, '.dockerignore'), 'utf8'), path);
    for (const path of image.contextSources) expect(sent(path), path).toBe(true);
    for (const path of [
      'node_modules',
      '.git',
      '.cluster',
      'test',
      'scripts',
      'dist',
      'README.md',
      'operator/node_modules',
    ]) {
      expect(sent(path), path).toBe(false);
    }
  });

  it('holds the bundle and no node_modules, TypeScript or native addon', () => {
    const app = join(image.rootDir, image.workdir);
    expect(existsSync(join(app, 'node_modules'))).toBe(false);
    const files = readdirSync(image.rootDir, { recursive: true }).map(String);
    expect(files.filter((p) => /\.[cm]?ts$/.test(p))).toEqual([]);
    // A native addon would be built against the build image, not the distroless runtime.
    expect(files.filter((p) => /\.node$|binding\.gyp$/.test(p))).toEqual([]);
    expect(files.some((p) => p.endsWith('dist/agentcard.js'))).toBe(true);
  });

  it("leaves client-node's generated API classes and models out of the bundle (build/client-node-alias.ts)", () => {
    const dist = join(image.rootDir, image.workdir, 'dist');
    const code = readdirSync(dist, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.js'))
      .map((f) => readFileSync(join(dist, f), 'utf8'))
      .join('\n');
    // KubeConfig is in, and what it needs of the generated code (createConfiguration).
    expect(code).toMatch(/\bKubeConfig = class\b/);
    expect(code).toMatch(/\bfunction createConfiguration\b/);
    // Every generated model has a static attributeTypeMap; every generated API class is named *Api.
    expect(code).not.toMatch(/\battributeTypeMap\b/);
    expect(code).not.toMatch(/\bCoreV1Api = class\b/);
  });

  it("the bundle imports nothing but Node.js's built-in modules", () => {
    const dist = join(image.rootDir, image.workdir, 'dist');
    const specifiers = new Set<string>();
    for (const file of readdirSync(dist, { recursive: true }).map(String)) {
      if (!file.endsWith('.js')) continue;
      const code = readFileSync(join(dist, file), 'utf8');
      // esbuild writes static imports at the start of a line and every specifier in double quotes.
      const patterns = [
        /^(?:import|export)\s[^;]*?\bfrom\s*"([^"]+)"/gm,
        /^import\s*"([^"]+)"/gm,
        /\bimport\(\s*"([^"]+)"\s*\)/g,
        /\brequire\(\s*"([^"]+)"\s*\)/g,
      ];
      for (const pattern of patterns) for (const m of code.matchAll(pattern)) specifiers.add(m[1]!);
    }
    expect(specifiers.size).toBeGreaterThan(5);
    const packages = [...specifiers].filter((s) => !s.startsWith('.') && !isBuiltin(s));
    expect(packages).toEqual([]);
  });
});

describe('the production build runs', () => {
  it('agentcard --help', () => {
    const r = runImage(['--help']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('operator');
    expect(r.stdout).toContain('sidecar');
  });

  it('runs without TypeScript stripping', () => {
    for (const command of ['sidecar', 'operator']) {
      const [bin, argv] = imageArgv([command, '--help']);
      const r = spawnSync(bin, ['--no-experimental-strip-types', ...argv], {
        cwd: join(image.rootDir, image.workdir),
        env: imageEnv(),
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.stderr, command).toBe('');
      expect(r.status, command).toBe(0);
    }
  });

  it('every subcommand loads and answers --help', () => {
    const help = runImage(['--help']).stdout;
    const commands = [...help.matchAll(/^ {2}([a-z][a-z-]*) {2,}/gm)].map((m) => m[1]!);
    expect(commands).toContain('demo-agent');
    expect(commands.length).toBeGreaterThanOrEqual(8);
    for (const command of commands) {
      const r = runImage([command, '--help']);
      expect(r.stderr, command).not.toMatch(
        /ERR_MODULE_NOT_FOUND|Cannot find (package|module)|ERR_ACCESS_DENIED/,
      );
      expect(r.status, `${command} --help: ${r.stderr}`).toBe(0);
      expect(r.stdout, command).toMatch(/--/);
    }
  });

  it('agentcard sidecar serves a kubelet-style ConfigMap volume', async () => {
    const dir = kubeletVolume(join(out, 'volume'), fixtureFiles());
    const [port, metricsPort] = [await freePort(), await freePort()];
    const [bin, argv] = imageArgv(
      ['sidecar', '--dir', dir, '--port', String(port), '--metrics-port', String(metricsPort)],
      [join(out, 'volume') + '/'],
    );
    const child = spawn(bin, argv, {
      cwd: join(image.rootDir, image.workdir),
      env: imageEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const res = await waitForOk(`http://127.0.0.1:${port}/.well-known/agent-card.json`, child);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.text()).toBe(fixtureFiles()['agent-card.json']);
      const ready = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
      expect(ready.status).toBe(200);
    } finally {
      await stop(child);
    }
  });
});

describe('agentcard demo-agent from the image (what examples/demo-agent.yaml runs)', () => {
  it('answers the A2A call of each binding, as the probes ask it, and stops on SIGTERM', async () => {
    const [port, grpcPort] = [await freePort(), await freePort()];
    const [bin, argv] = imageArgv([
      'demo-agent',
      '--address=127.0.0.1',
      `--port=${port}`,
      `--grpc-port=${grpcPort}`,
    ]);
    const child = spawn(bin, argv, {
      cwd: join(image.rootDir, image.workdir),
      env: imageEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const health = await waitForOk(`http://127.0.0.1:${port}/healthz`, child);
      expect(await health.text()).toBe('ok\n');
      const base = `http://127.0.0.1:${port}`;
      for (const [url, binding] of [
        [`${base}/a2a/jsonrpc`, 'JSONRPC'],
        [`${base}/a2a/rest`, 'HTTP+JSON'],
        [`http://127.0.0.1:${grpcPort}`, 'GRPC'],
      ] as const) {
        // The checkout's `agentcard probe`: the operator's own probe of one interface.
        const r = spawnSync(
          node,
          [
            join(repoRoot, 'bin', 'agentcard.js'),
            'probe',
            '--url',
            url,
            '--binding',
            binding,
            '--allow-cidr',
            '127.0.0.1/32',
          ],
          { encoding: 'utf8', timeout: 60_000 },
        );
        expect(r.status, `${binding}: ${r.stdout}${r.stderr}`).toBe(0);
      }
    } finally {
      const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      expect(await exit).toBe(0);
    }
  }, 120_000);
});

describe('the production build against the control plane', () => {
  let ns: TestNamespace;
  beforeAll(async () => {
    await applyYaml(readFileSync(join(repoRoot, 'crds', 'agentcard.dev_agentcards.yaml'), 'utf8'));
    await waitForCrdEstablished('agentcards.agentcard.dev');
    ns = await createTestNamespace('prod-build');
  });
  afterAll(async () => {
    await ns?.cleanup();
  });

  it('agentcard operator reconciles an AgentCard, then stops cleanly on SIGTERM', async () => {
    const metricsPort = await freePort();
    const [bin, argv] = imageArgv(
      [
        'operator',
        `--kubeconfig=${kubeconfigPath()}`,
        `--namespace=${ns.name}`,
        '--no-leader-elect',
        `--metrics-port=${metricsPort}`,
        '--bind-address=127.0.0.1',
        '--webhook-port=0',
        '--no-probes',
      ],
      [kubeconfigPath()],
    );
    const child = spawn(bin, argv, {
      cwd: join(image.rootDir, image.workdir),
      env: { ...imageEnv(), POD_NAMESPACE: ns.name },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await waitForOk(`http://127.0.0.1:${metricsPort}/readyz`, child);
      await applyYaml(
        `apiVersion: agentcard.dev/v1alpha1
kind: AgentCard
metadata: {name: prod-build, namespace: ${ns.name}}
spec:
  card: ${JSON.stringify(JSON.parse(fixtureFiles()['agent-card.json']!))}
`,
      );
      const core = kubeConfig().makeApiClient(CoreV1Api);
      const deadline = Date.now() + 30_000;
      let published: string | undefined;
      while (!published && Date.now() < deadline) {
        published = await core
          .readNamespacedConfigMap({ name: 'prod-build-agent-card', namespace: ns.name })
          .then((cm) => cm.data?.['agent-card.json'])
          .catch(() => undefined);
        if (!published) await new Promise((r) => setTimeout(r, 250));
      }
      expect(JSON.parse(published ?? '{}')).toMatchObject({ name: 'Prod build agent', version: '1.0.0' });
    } finally {
      const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      expect(await exit).toBe(0);
    }
  });
});

/**
 * Whether the build context holds `path` under .dockerignore's rules (last matching pattern wins,
 * `!` re-includes; `*` does not cross `/`, `**` does; a pattern also covers what is below it).
 */
function dockerignoreIncludes(rules: string, path: string): boolean {
  let included = true;
  for (const raw of rules.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    const pattern = (negate ? line.slice(1) : line).replace(/^\/+|\/+$/g, '');
    const regex = new RegExp(
      '^' +
        pattern
          .split('**/')
          .map((part) =>
            part
              .replace(/[.+^${}()|[\]\\]/g, '\\$&')
              .replace(/\*/g, '[^/]*')
              .replace(/\?/g, '[^/]'),
          )
          .join('(?:.*/)?') +
        '(?:/.*)?$',
    );
    if (regex.test(path)) included = negate;
  }
  return included;
}

/** A v1.0 card as the controller publishes it (unsigned), and its companions. */
function fixtureFiles(): Record<string, string> {
  const card = {
    name: 'Prod build agent',
    description: 'Fixture for the production build test',
    version: '1.0.0',
    supportedInterfaces: [
      { url: 'https://agent.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: {},
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'Echo', description: 'Echoes text', tags: ['echo'] }],
  };
  const v03 = {
    name: card.name,
    description: card.description,
    version: card.version,
    protocolVersion: '0.3.0',
    url: 'https://agent.example.com/a2a',
    preferredTransport: 'JSONRPC',
    capabilities: {},
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: card.skills,
  };
  return {
    'agent-card.json': JSON.stringify(card),
    'agent.json': JSON.stringify(v03),
    'jwks.json': '{"keys":[]}',
    'cache-max-age-seconds': '300',
  };
}

/** Lays files out the way the kubelet does for a ConfigMap volume: `..data` -> timestamped dir. */
export function kubeletVolume(dir: string, files: Record<string, string>): string {
  const stamp = `..2026_01_01_00_00_00.000000001`;
  mkdirSync(join(dir, stamp), { recursive: true });
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, stamp, name), body);
  symlinkSync(stamp, join(dir, '..data'));
  for (const name of Object.keys(files)) symlinkSync(join('..data', name), join(dir, name));
  return dir;
}

async function waitForOk(url: string, child: ChildProcess): Promise<Response> {
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}: ${stderr.slice(-2000)}`);
    try {
      const res = await fetch(url);
      if (res.ok) return res;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} not ready within 20 s: ${stderr.slice(-2000)}`);
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });
}
