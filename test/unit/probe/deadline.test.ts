/**
 * The probe's deadlines (operator/probe/deadline.ts): the overall timeout, the connect timeout
 * and the caller's cancellation each end a probe with their own verdict, and a finished probe
 * leaves no timer behind.
 */
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { abortCode } from '../../../operator/probe/connect.ts';
import { PROBE_CODES } from '../../../operator/probe/classify.ts';
import { deadline, timeoutReason } from '../../../operator/probe/deadline.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { probeInterface } from '../../../operator/probe/probe.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });

/** A TCP server that accepts connections and never says a word (a TLS handshake never ends). */
const sockets = new Set<net.Socket>();
const silent = net.createServer((s) => {
  sockets.add(s);
  s.on('error', () => {});
  s.on('close', () => sockets.delete(s));
});
const silentPort = await new Promise<number>((resolve) =>
  silent.listen(0, '127.0.0.1', () => resolve((silent.address() as net.AddressInfo).port)),
);
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent.close(r));
});

describe('deadline', () => {
  it('aborts after its time with the reason given, read as a timeout', async () => {
    const d = deadline(20, timeoutReason);
    expect(d.signal.aborted).toBe(false);
    await sleep(60);
    expect(d.signal.aborted).toBe(true);
    expect(abortCode(d.signal)).toBe(PROBE_CODES.timeout);
  });

  it("follows its parent at once, with the parent's reason", () => {
    const parent = new AbortController();
    const d = deadline(60_000, timeoutReason, parent.signal);
    parent.abort();
    expect(d.signal.aborted).toBe(true);
    expect(abortCode(d.signal)).toBe(PROBE_CODES.cancelled);
    const late = deadline(60_000, timeoutReason, parent.signal); // parent already aborted
    expect(late.signal.aborted).toBe(true);
    expect(abortCode(late.signal)).toBe(PROBE_CODES.cancelled);
  });

  it('done() clears the timer and lets go of the parent', async () => {
    const parent = new AbortController();
    const d = deadline(20, timeoutReason, parent.signal);
    d.done();
    await sleep(60);
    parent.abort();
    expect(d.signal.aborted).toBe(false);
  });
});

describe('probe deadlines', () => {
  const target = {
    url: `https://127.0.0.1:${silentPort}/a2a`,
    protocolBinding: 'JSONRPC',
    protocolVersion: '1.0',
  } as const;

  it('a TLS handshake that never ends: Timeout at the connect deadline, not the overall one', async () => {
    const t0 = performance.now();
    const result = await probeInterface(target, { timeoutMs: 5_000, connectTimeoutMs: 150, policy });
    expect(result).toMatchObject({ reachable: false, reason: 'Timeout' });
    expect(result.message).toContain('connect timed out');
    expect(performance.now() - t0).toBeLessThan(2_000);
  });

  it('the overall deadline when it comes first', async () => {
    const result = await probeInterface(target, { timeoutMs: 150, connectTimeoutMs: 5_000, policy });
    expect(result).toMatchObject({ reachable: false, reason: 'Timeout' });
    expect(result.message).toContain('no complete answer in time');
  });

  it("the caller's cancellation", async () => {
    const cancel = new AbortController();
    const pending = probeInterface(target, { timeoutMs: 5_000, policy, signal: cancel.signal });
    await sleep(50);
    cancel.abort();
    const result = await pending;
    expect(result).toMatchObject({ reachable: false, reason: 'Timeout', message: 'probe cancelled' });
  });
});
