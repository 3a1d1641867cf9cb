// `npm test`, after the typecheck and the linters: every test project, in the order that keeps
// the machine's cores busy without letting two projects touch the same cluster.
// 1. `unit` and `integration` in one vitest run: three files at a time on the shared control
//    plane (vitest.config.ts).
// 2. Then, at the same time:
//    - `integration-serial`, one file at a time with the control plane to itself (a fresh one:
//      this run's global setup starts it again, in about 5 s), with a few files that could run
//      in step 1 but take its CPU there (LATE_INTEGRATION in vitest.config.ts);
//    - the `node` project (`npm run test:node`, test/node/run.ts), on the node cluster: another
//      API server, etcd and kubelet, in network, mount and PID namespaces of their own, with state
//      in `.node-cluster/` rather than `.cluster/`. Nothing a serial file counts, compacts or
//      watches is there, and the node project creates no interface in the machine's network
//      namespace that a serial file could see.
//    Both mostly wait (on the API server, kubelet syncs, Pods), so running them side by side
//    saves most of the shorter one's time. The node project's output is held and printed when it
//    ends, so the two logs do not interleave.
// A failure in step 1 stops the run there, as it did when the projects ran one after the other.
// Arguments are passed to every vitest run (`npm test -- --reporter=verbose`).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './controlplane/paths.ts';

const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
const extra = process.argv.slice(2);

type Outcome = { code: number; output?: string };

function run(args: string[], opts: { holdOutput?: boolean } = {}): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      cwd: repoRoot,
      stdio: opts.holdOutput ? ['ignore', 'pipe', 'pipe'] : 'inherit',
    });
    const chunks: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', (err) => resolve({ code: 1, output: `${args.join(' ')}: ${err.message}\n` }));
    child.on('close', (code, signal) =>
      resolve({
        code: code ?? (signal ? 1 : 0),
        output: opts.holdOutput ? Buffer.concat(chunks).toString('utf8') : undefined,
      }),
    );
  });
}

/** Runs the projects; resolves with the exit code (the first failure's). */
async function runSuite(): Promise<number> {
  const first = await run([vitest, 'run', '--project', 'unit', '--project', 'integration', ...extra]);
  if (first.code !== 0) return first.code;

  process.stdout.write(
    '\n`integration-serial` now; the `node` project runs beside it (its log follows it)\n\n',
  );
  const [serial, node] = await Promise.all([
    run([vitest, 'run', '--project', 'integration-serial', ...extra]),
    run([join(repoRoot, 'test', 'node', 'run.ts'), ...extra], { holdOutput: true }),
  ]);
  process.stdout.write(`\n==== the node project (npm run test:node) ====\n${node.output ?? ''}`);
  if (serial.code !== 0) process.stderr.write(`\nintegration-serial failed (exit ${serial.code})\n`);
  if (node.code !== 0) process.stderr.write(`\nthe node project failed (exit ${node.code})\n`);
  return serial.code !== 0 ? serial.code : node.code;
}

// exitCode, not exit(): the held log may still be on its way to a pipe (asynchronous off Linux).
process.exitCode = await runSuite();
