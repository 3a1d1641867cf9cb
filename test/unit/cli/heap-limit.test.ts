import { describe, expect, it } from 'vitest';
import { oldSpaceMiB, planHeapLimit, restartArgs } from '../../../operator/cli/heap-limit.ts';

const MiB = 1024 * 1024;

describe('V8 old space derived from the container memory limit', () => {
  it.each([
    // limit MiB, old space MiB: three quarters, with at least 128 MiB left outside, at least 64
    [2048, 1536],
    [1024, 768],
    [512, 384],
    [384, 256],
    [256, 128],
    [192, 64],
    [128, 64],
  ])('%i MiB limit: %i MiB of old space', (limit, expected) => {
    expect(oldSpaceMiB(limit * MiB)).toBe(expected);
  });

  it('rounds down a limit that is not a whole number of MiB', () => {
    expect(oldSpaceMiB(500_000_000)).toBe(
      Math.floor(Math.min((500_000_000 / MiB) * 0.75, 500_000_000 / MiB - 128)),
    );
  });
});

describe('planHeapLimit', () => {
  const base = { execArgv: [] as string[], nodeOptions: undefined };

  it('restarts with the derived flag when the downward API gives a limit', () => {
    expect(planHeapLimit({ ...base, limit: String(512 * MiB) })).toEqual({
      action: 'restart',
      oldSpaceMiB: 384,
      limitBytes: 512 * MiB,
    });
  });

  it('keeps Node.js sizing when no limit is given', () => {
    expect(planHeapLimit({ ...base, limit: undefined })).toEqual({ action: 'keep', reason: 'no-limit' });
    expect(planHeapLimit({ ...base, limit: ' ' })).toEqual({ action: 'keep', reason: 'no-limit' });
  });

  it('leaves a heap flag the user gave (or the restart set) alone, on the command line or in NODE_OPTIONS', () => {
    const limit = String(512 * MiB);
    for (const execArgv of [['--max-old-space-size=300'], ['--max-old-space-size-percentage=50']]) {
      expect(planHeapLimit({ limit, execArgv, nodeOptions: undefined })).toEqual({
        action: 'keep',
        reason: 'flag-given',
      });
    }
    expect(
      planHeapLimit({ limit, execArgv: [], nodeOptions: '--enable-source-maps --max-old-space-size=300' }),
    ).toEqual({
      action: 'keep',
      reason: 'flag-given',
    });
    // Another flag that merely starts the same way is not a heap flag.
    expect(
      planHeapLimit({ limit, execArgv: ['--max-old-space-size-x=1'], nodeOptions: undefined }).action,
    ).toBe('restart');
  });

  it('refuses what is not a plain number of bytes, without guessing', () => {
    for (const limit of ['512Mi', '-1', '0', '1e9', '99999999999999999999']) {
      expect(planHeapLimit({ ...base, limit }).action).toBe('invalid');
    }
  });
});

describe('restartArgs', () => {
  it('puts the flag among the Node.js options, before the script and its arguments', () => {
    expect(
      restartArgs(
        '/nodejs/bin/node',
        ['--enable-source-maps'],
        ['/nodejs/bin/node', '/app/bin/agentcard.js', 'operator', '--no-probes'],
        384,
      ),
    ).toEqual([
      '/nodejs/bin/node',
      '--enable-source-maps',
      '--max-old-space-size=384',
      '/app/bin/agentcard.js',
      'operator',
      '--no-probes',
    ]);
  });
});
