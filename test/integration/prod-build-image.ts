/**
 * Reproduces the container image's file system without a container engine: reads the
 * Dockerfile, copies what its COPY lines copy, lets the caller play the build stage's RUN lines
 * (install and bundle); the test runs the image's ENTRYPOINT on the Node.js 24 of the devDependency.
 */
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, join, posix } from 'node:path';
import { repoRoot } from '../support/paths.ts';

export type Instruction = { op: string; flags: Record<string, string>; args: string[]; raw: string };
export type Stage = { from: string; name?: string; instructions: Instruction[] };

/** Parses Dockerfile text into stages (line continuations, comments, JSON and shell forms). */
export function parseDockerfile(text: string, buildArgs: Record<string, string> = {}): Stage[] {
  const logical: string[] = [];
  let current = '';
  for (const line of text.split('\n')) {
    if (!current && /^\s*#/.test(line)) continue;
    if (/\\\s*$/.test(line)) {
      current += line.replace(/\\\s*$/, ' ');
      continue;
    }
    current += line;
    if (current.trim()) logical.push(current.trim());
    current = '';
  }
  const args: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const raw of logical) {
    const [op0, ...rest] = raw.split(/\s+/);
    const op = op0!.toUpperCase();
    let words = rest;
    const flags: Record<string, string> = {};
    while (words[0]?.startsWith('--')) {
      const [k, v] = words[0].slice(2).split('=', 2);
      flags[k!] = v ?? 'true';
      words = words.slice(1);
    }
    const body = words.join(' ');
    const argv = body.startsWith('[') ? (JSON.parse(body) as string[]) : words;
    const substituted = argv.map((w) => w.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => args[a ?? b] ?? ''));
    if (op === 'ARG') {
      const [k, v] = body.split('=', 2);
      // `ARG NAME` without a value inside a stage takes the global default, as in Docker.
      args[k!] = buildArgs[k!] ?? v ?? args[k!] ?? '';
      continue;
    }
    if (op === 'FROM') {
      const asIndex = substituted.findIndex((w) => w.toUpperCase() === 'AS');
      stages.push({
        from: substituted[0]!,
        name: asIndex > 0 ? substituted[asIndex + 1] : undefined,
        instructions: [],
      });
      continue;
    }
    if (!stages.length) throw new Error(`Dockerfile: ${op} before the first FROM`);
    stages.at(-1)!.instructions.push({ op, flags, args: substituted, raw });
  }
  return stages;
}

export type ImageLayout = {
  /** The build stage's /app after its COPY lines and its RUN lines (played by the caller). */
  buildDir: string;
  /** The runtime stage's root (its WORKDIR is `workdir` inside it). */
  rootDir: string;
  workdir: string;
  entrypoint: string[];
  cmd: string[];
  user: string;
  env: Record<string, string>;
  /** The RUN lines of the build stage, for assertions. */
  buildRuns: string[];
  /** The RUN lines of the runtime stage (exec form), to be replayed by the caller. */
  runtimeRuns: string[][];
  /** The paths the build stage copies from the build context. */
  contextSources: string[];
};

/** Follows the Dockerfile into `outDir`; `install(dir)` plays the build stage's RUN lines. */
export function buildImageLayout(outDir: string, install: (dir: string) => void): ImageLayout {
  const stages = parseDockerfile(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
  const build = stages.find((s) => s.name === 'build');
  const runtime = stages.at(-1);
  if (!build || !runtime || runtime === build)
    throw new Error('Dockerfile: expected a `build` stage and a runtime stage');

  const buildWorkdir = lastArg(build, 'WORKDIR') ?? '/';
  const buildDir = join(outDir, 'build');
  mkdirSync(buildDir, { recursive: true });
  for (const ins of build.instructions.filter((i) => i.op === 'COPY')) {
    if (ins.flags.from) throw new Error('Dockerfile: COPY --from in the build stage is not reproduced');
    copyFromContext(ins.args, buildDir, buildWorkdir);
  }
  install(buildDir);
  // Directories the build stage's RUN lines create with `mkdir -p` (for the runtime stage to copy).
  for (const run of build.instructions.filter((i) => i.op === 'RUN')) {
    for (const m of run.args.join(' ').matchAll(/mkdir -p((?:\s+[\w./-]+)+)/g)) {
      for (const dir of m[1]!.trim().split(/\s+/))
        mkdirSync(join(buildDir, posix.relative(buildWorkdir, posix.resolve(buildWorkdir, dir))), {
          recursive: true,
        });
    }
  }

  const workdir = lastArg(runtime, 'WORKDIR') ?? '/';
  const rootDir = join(outDir, 'root');
  for (const ins of runtime.instructions.filter((i) => i.op === 'COPY')) {
    if (ins.flags.from !== 'build')
      throw new Error(`Dockerfile: runtime COPY without --from=build: ${ins.raw}`);
    const dest = ins.args.at(-1)!;
    for (const src of ins.args.slice(0, -1)) {
      const from = join(buildDir, posix.relative(buildWorkdir, src));
      const to = join(
        rootDir,
        posix.resolve(workdir, dest.endsWith('/') ? posix.join(dest, basename(src)) : dest),
      );
      if (!existsSync(from)) throw new Error(`Dockerfile copies ${src}, which the build stage does not have`);
      cpSync(from, to, { recursive: true, verbatimSymlinks: true });
    }
  }
  const env: Record<string, string> = {};
  for (const ins of runtime.instructions.filter((i) => i.op === 'ENV')) {
    for (const pair of ins.args) {
      const [k, v] = pair.split('=', 2);
      env[k!] = v ?? '';
    }
  }
  return {
    buildDir,
    rootDir,
    workdir,
    entrypoint: runtime.instructions.findLast((i) => i.op === 'ENTRYPOINT')?.args ?? [],
    cmd: runtime.instructions.findLast((i) => i.op === 'CMD')?.args ?? [],
    user: lastArg(runtime, 'USER') ?? 'root',
    env,
    buildRuns: build.instructions.filter((i) => i.op === 'RUN').map((i) => i.args.join(' ')),
    runtimeRuns: runtime.instructions.filter((i) => i.op === 'RUN').map((i) => i.args),
    contextSources: build.instructions
      .filter((i) => i.op === 'COPY' && !i.flags.from)
      .flatMap((i) => i.args.slice(0, -1).map((a) => a.replace(/^\.\/|\/$/g, ''))),
  };
}

function lastArg(stage: Stage, op: string): string | undefined {
  return stage.instructions.findLast((i) => i.op === op)?.args[0];
}

/** COPY from the build context (the repository), honouring the .dockerignore re-exclusions. */
function copyFromContext(args: string[], stageDir: string, workdir: string): void {
  const dest = args.at(-1)!;
  for (const src of args.slice(0, -1)) {
    const from = join(repoRoot, src);
    if (!existsSync(from)) throw new Error(`Dockerfile copies ${src}, which the repository does not have`);
    const target = dest.endsWith('/') || args.length > 2 ? posix.join(dest, basename(src)) : dest;
    cpSync(from, join(stageDir, posix.relative(workdir, posix.resolve(workdir, target))), {
      recursive: true,
      filter: (p) => !/(^|\/)(node_modules|\.DS_Store)(\/|$)|\.log$/.test(p.slice(repoRoot.length)),
    });
  }
}
