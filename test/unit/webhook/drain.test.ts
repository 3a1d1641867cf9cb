import { afterEach, describe, expect, it, vi } from 'vitest';
import { drainOnAbort } from '../../../operator/webhook/drain.ts';
import { createLogger } from '../../../operator/log.ts';

afterEach(() => {
  vi.useRealTimers();
});

function recorder() {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger(
    {},
    { level: 'info', write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { lines, log };
}

describe('drainOnAbort', () => {
  it('closes once the delay has passed since the signal, and logs the drain once', async () => {
    vi.useFakeTimers();
    const { lines, log } = recorder();
    const ctl = new AbortController();
    const close = vi.fn(async () => {});
    const drain = drainOnAbort({ signal: ctl.signal, delayMs: 3_000, log, close });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(close).not.toHaveBeenCalled();
    ctl.abort();
    await vi.advanceTimersByTimeAsync(2_999);
    expect(close).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    await drain.drained;
    expect(close).toHaveBeenCalledTimes(1);
    expect(lines.filter((l) => l.msg === 'webhook draining')).toEqual([
      expect.objectContaining({ level: 'info', delayMs: 3_000 }),
    ]);
    await drain.closeNow();
    expect(close).toHaveBeenCalledTimes(1);
  });

  it('closes at once, without a drain line, when the delay is 0', async () => {
    const { lines, log } = recorder();
    const ctl = new AbortController();
    const close = vi.fn(async () => {});
    const drain = drainOnAbort({ signal: ctl.signal, delayMs: 0, log, close });
    ctl.abort();
    await drain.drained;
    expect(close).toHaveBeenCalledTimes(1);
    expect(lines.some((l) => l.msg === 'webhook draining')).toBe(false);
  });

  it('closes at once on closeNow(), and a later signal does not close again', async () => {
    vi.useFakeTimers();
    const { log } = recorder();
    const ctl = new AbortController();
    const close = vi.fn(async () => {});
    const drain = drainOnAbort({ signal: ctl.signal, delayMs: 5_000, log, close });
    await drain.closeNow();
    expect(close).toHaveBeenCalledTimes(1);
    ctl.abort();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(close).toHaveBeenCalledTimes(1);
  });
});
