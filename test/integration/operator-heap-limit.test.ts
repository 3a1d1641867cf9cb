// `agentcard operator` sizes V8's old space from the container memory limit the chart passes
// through the downward API (AGENTCARD_MEMORY_LIMIT, bytes): the real command, started as the
// image starts it, replaces itself (same PID) with --max-old-space-size and says so once.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oldSpaceMiB } from '../../operator/cli/heap-limit.ts';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import {
  Api,
  installCrd,
  sampleCard,
  spawnOperator,
  waitFor,
  type ChildOperator,
} from '../support/operator.ts';

const MiB = 1024 * 1024;
const kc = kubeConfig();
let ns: TestNamespace;
const procs: ChildOperator[] = [];

beforeAll(async () => {
  await installCrd(kc);
  ns = await createTestNamespace('heap-limit');
});
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await ns?.cleanup();
});

const FLAGS = ['--no-leader-elect', '--no-probes', '--webhook-port', '0', '--no-catalogs'];

function start(env: Record<string, string>): ChildOperator {
  const op = spawnOperator(ns.name, FLAGS, { env });
  procs.push(op);
  return op;
}

/** The command line of the running process, as the kernel has it. */
const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

describe('operator heap limit from the memory limit', () => {
  it.each([512, 256])('a %i MiB limit runs the operator with the derived old space', async (limitMiB) => {
    const op = start({ AGENTCARD_MEMORY_LIMIT: String(limitMiB * MiB) });
    const line = await op.waitForLog('heap limit');
    const expected = oldSpaceMiB(limitMiB * MiB);
    expect(line).toMatchObject({ source: 'memory limit', memoryLimitMiB: limitMiB, oldSpaceMiB: expected });
    // V8's own figure: the old space asked for plus the young generation (at most 3 semi-spaces).
    const heapLimit = line.heapSizeLimitMiB as number;
    expect(heapLimit).toBeGreaterThanOrEqual(expected);
    expect(heapLimit).toBeLessThan(expected + 200);
    // The same process (execve), now with the flag; and it goes on to run the operator.
    expect(cmdline(op.child.pid!)).toContain(`--max-old-space-size=${expected}`);
    await op.waitForLog('operator starting');
    expect(op.lines.filter((l) => l.includes('"heap limit"'))).toHaveLength(1);
    op.child.kill('SIGTERM');
    expect(await op.exited).toBe(0);
  });

  it("leaves Node.js's sizing without a limit, and a heap flag the user gave", async () => {
    const plain = start({ AGENTCARD_MEMORY_LIMIT: '' });
    expect(await plain.waitForLog('heap limit')).toMatchObject({ source: 'node' });
    expect(cmdline(plain.child.pid!).some((a) => a.startsWith('--max-old-space-size'))).toBe(false);

    const own = start({
      AGENTCARD_MEMORY_LIMIT: String(512 * MiB),
      NODE_OPTIONS: '--max-old-space-size=100',
    });
    const line = await own.waitForLog('heap limit');
    expect(line).toMatchObject({ source: 'flag' });
    expect(line.heapSizeLimitMiB as number).toBeGreaterThanOrEqual(100);
    // Below the 384 MiB of old space the limit alone would have given.
    expect(line.heapSizeLimitMiB as number).toBeLessThan(384);
  });

  it('says so when the limit is not a number of bytes, and runs on', async () => {
    const op = start({ AGENTCARD_MEMORY_LIMIT: '512Mi' });
    const line = await op.waitForLog(
      'AGENTCARD_MEMORY_LIMIT is not a number of bytes; the heap is sized by Node.js',
    );
    expect(line).toMatchObject({ value: '512Mi' });
    await op.waitForLog('operator starting');
  });

  it("sets the steady state's heap growth once every AgentCard has been reconciled", async () => {
    // The operators of the cases above still watch this namespace: only this one reconciles here.
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    const api = new Api(kc);
    const names = ['steady-a', 'steady-b'];
    for (const name of names) await api.createCard(ns.name, name, { card: sampleCard('1.0.0') });
    const op = start({ AGENTCARD_MEMORY_LIMIT: '' });
    const caughtUp = await op.waitForLog('every AgentCard reconciled once');
    // The namespace also holds what the cases above left: nothing but these two cards.
    expect(caughtUp).toMatchObject({ agentCards: names.length });
    // Both reconciled (and written) by then.
    for (const name of names) {
      const live = await api.getCard(ns.name, name);
      expect(live?.status?.observedGeneration).toBe(live?.metadata.generation);
    }
    expect(await op.waitForLog('heap growth set for the steady state')).toMatchObject({
      heapGrowingPercent: 25,
    });
    const order = op.lines.findIndex((l) => l.includes('heap growth set'));
    expect(order).toBeGreaterThan(op.lines.findIndex((l) => l.includes('every AgentCard reconciled once')));
    // A change after that is an ordinary reconcile: neither line again.
    await api.replaceSpec(ns.name, names[0]!, { card: sampleCard('1.0.1') });
    await waitFor('the change reconciled', async () => {
      const live = await api.getCard(ns.name, names[0]!);
      return (
        live?.status?.observedGeneration === live?.metadata.generation && live?.metadata.generation === 2
      );
    });
    op.child.kill('SIGTERM');
    expect(await op.exited).toBe(0);
    expect(op.lines.filter((l) => l.includes('heap growth set'))).toHaveLength(1);
    expect(op.lines.filter((l) => l.includes('every AgentCard reconciled once'))).toHaveLength(1);
  });
});
