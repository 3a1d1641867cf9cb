// `npm test`, after the typecheck and the linters: every test project, all three runs at once,
// none touching another's cluster:
// - `unit` and `integration` in one vitest run, three files at a time on the shared control plane
//   in `.cluster/` (vitest.config.ts);
// - `integration-serial`, one file at a time, on a control plane of its own in `.cluster-serial/`
//   (AGENTCARD_CLUSTER_DIR, test/controlplane/paths.ts): what a serial file counts, compacts,
//   edits or watches cluster-wide is on an API server and an etcd that nothing else uses;
// - the `node` project (`npm run test:node`, test/node/run.ts), on the node cluster: another API
//   server, etcd and kubelet, in network, mount and PID namespaces of their own, with state in
//   `.node-cluster/`. It creates no interface in the machine's network namespace.
// The serial files and the node project mostly wait on clocks (sources fetched every 10 s, windows
// of 60 s, kubelet syncs, Pods), the first run keeps the cores busy. So the first run gets a lower
// CPU priority (nice 5, inherited by every process it starts): the waiting runs get the CPU at
// once when they need it, with deadlines that hold as they do alone, and the first run takes
// every cycle they leave. docs/development.md ("The suite's time") has the figures.
// The two other runs' output is held and printed when the first ends, so the logs do not
// interleave. Arguments are passed to every vitest run (`npm test -- --reporter=verbose`).
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './controlplane/paths.ts';
import { nodeUnavailable } from './node/preflight.ts';
import { ensurePackages, NODE_PACKAGES, SYSTEM_PACKAGES } from './support/system-packages.ts';

const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
const extra = process.argv.slice(2);

/** The first run's CPU priority (nice value, 0 to 19; higher yields more). */
const BUSY_RUN_NICENESS = 5;

type Outcome = { name: string; code: number; output?: string };

interface RunOptions {
  holdOutput?: boolean;
  env?: NodeJS.ProcessEnv;
  niceness?: number;
}

function run(name: string, args: string[], opts: RunOptions = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: repoRoot,
      env: { ...process.env, ...opts.env },
      stdio: opts.holdOutput ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    });
    // Set before the child has started anything (Node.js takes far longer to boot), so that every
    // process of the run inherits it. A child already gone is reported by its 'close' below.
    if (opts.niceness && child.pid) {
      try {
        setPriority(child.pid, opts.niceness);
      } catch {
        // it exited at once: nothing to lower
      }
    }
    const chunks: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', (err) => resolve({ name, code: 1, output: `${args.join(' ')}: ${err.message}\n` }));
    child.on('close', (code, signal) =>
      resolve({
        name,
        code: code ?? (signal ? 1 : 0),
        output: opts.holdOutput ? Buffer.concat(chunks).toString('utf8') : undefined,
      }),
    );
  });
}

/** Installs the missing Debian packages once, before the runs whose global setups check them start together (apt-get holds a lock). */
function installPackages(): void {
  ensurePackages(SYSTEM_PACKAGES);
  if (!nodeUnavailable()) ensurePackages(NODE_PACKAGES);
}

/** Runs the projects; resolves with the exit code (the first failure's). */
async function runSuite(): Promise<number> {
  try {
    installPackages();
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 1;
  }
  process.stdout.write(
    '`unit` and `integration` now; `integration-serial` and the `node` project run beside them (their logs follow)\n\n',
  );
  const outcomes = await Promise.all([
    run('unit and integration', [vitest, 'run', '--project', 'unit', '--project', 'integration', ...extra], {
      niceness: BUSY_RUN_NICENESS,
    }),
    run('integration-serial', [vitest, 'run', '--project', 'integration-serial', ...extra], {
      holdOutput: true,
      env: { AGENTCARD_CLUSTER_DIR: '.cluster-serial' },
    }),
    run('the node project', [join(repoRoot, 'test', 'node', 'run.ts'), ...extra], { holdOutput: true }),
  ]);
  for (const outcome of outcomes) {
    if (outcome.output !== undefined) process.stdout.write(`\n==== ${outcome.name} ====\n${outcome.output}`);
  }
  for (const outcome of outcomes) {
    if (outcome.code !== 0) process.stderr.write(`\n${outcome.name} failed (exit ${outcome.code})\n`);
  }
  return outcomes.find((outcome) => outcome.code !== 0)?.code ?? 0;
}

// exitCode, not exit(): the held logs may still be on their way to a pipe (asynchronous off Linux).
process.exitCode = await runSuite();
