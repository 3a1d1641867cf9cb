// The re-fetch policy and the last-good rule of an adopted card, on a manual clock. The fetch is
// an in-memory double (the real fetching is covered by test/integration/adopt-source.test.ts).
import { describe, expect, it } from 'vitest';
import { SourceTracker, CONFIRM_MS } from '../../../operator/source/tracker.ts';
import {
  classifyFetchError,
  sourceDigest,
  sourceUrls,
  type SourceResult,
} from '../../../operator/source/fetch.ts';
import { toV1 } from '../../../operator/source/convert.ts';
import type { FetchErrorCode } from '../../../operator/discover/report.ts';
import { ManualClock } from '../../support/clock.ts';
import { minimalCard } from '../../support/cards.ts';

const card = (version: string) => ({ ...minimalCard(), version });
const ok = (served: Record<string, unknown>): SourceResult => ({
  ok: true,
  url: 'http://agent.test/.well-known/agent-card.json',
  digest: sourceDigest(JSON.stringify(served)),
  served,
  converted: toV1(served),
});

function setup(interval = '10s') {
  const clock = new ManualClock();
  let answer: SourceResult = ok(card('1'));
  let fetches = 0;
  const tracker = new SourceTracker({
    clock,
    fetch: async () => {
      fetches++;
      return answer;
    },
    servicePort: async (_ns, _svc, port) => (port === 'http' ? 8080 : undefined),
  });
  const spec = { source: { url: 'http://agent.test/', interval }, card: { description: 'fixed' } };
  const resolve = () =>
    tracker.resolve('ns/a', { namespace: 'ns', spec }, new Date(), new AbortController().signal);
  return {
    clock,
    resolve,
    set: (r: SourceResult) => (answer = r),
    fetches: () => fetches,
  };
}

describe('SourceTracker', () => {
  it('ignores written cards', async () => {
    const t = new SourceTracker({
      clock: new ManualClock(),
      fetch: async () => ok({}),
      servicePort: async () => 1,
    });
    expect(
      await t.resolve(
        'k',
        { namespace: 'n', spec: { card: minimalCard() } },
        new Date(),
        new AbortController().signal,
      ),
    ).toBeUndefined();
  });

  it('adopts at the first fetch, overlays spec.card, and fetches again only when the interval is up', async () => {
    const s = setup();
    const first = await s.resolve();
    expect(first!.fetched).toBe(true);
    expect(first!.condition).toMatchObject({ status: 'True', reason: 'Adopted' });
    expect((first!.spec!.card as Record<string, unknown>).description).toBe('fixed');
    expect(first!.requeueAfterMs).toBe(10_000);
    await s.clock.advance(9_999);
    const early = await s.resolve();
    expect(early!.fetched).toBe(false);
    expect(early!.requeueAfterMs).toBe(1_000); // never a busy loop
    expect(s.fetches()).toBe(1);
    await s.clock.advance(1);
    expect((await s.resolve())!.fetched).toBe(true);
    expect(s.fetches()).toBe(2);
  });

  it('adopts a change only when the confirming fetch sees it again (debounce)', async () => {
    const s = setup('1m');
    await s.resolve();
    s.set(ok(card('2')));
    await s.clock.advance(60_000);
    const seen = await s.resolve();
    expect((seen!.spec!.card as Record<string, unknown>).version).toBe('1'); // not yet
    expect(seen!.requeueAfterMs).toBe(CONFIRM_MS);
    await s.clock.advance(CONFIRM_MS);
    const confirmed = await s.resolve();
    expect((confirmed!.spec!.card as Record<string, unknown>).version).toBe('2');
    expect(confirmed!.status).toMatchObject({ changes: 1 });
    expect(confirmed!.events).toEqual([expect.objectContaining({ reason: 'SourceChanged' })]);
  });

  it('a source that flips at every fetch is never adopted again', async () => {
    const s = setup('10s');
    await s.resolve();
    let adoptions = 0;
    for (let i = 0; i < 30; i++) {
      s.set(ok(card(i % 2 === 0 ? '2' : '3')));
      await s.clock.advance(10_000);
      const r = await s.resolve();
      adoptions += r!.events.length;
    }
    expect(adoptions).toBe(0);
    expect(s.fetches()).toBe(31);
  });

  it('keeps the last good card when the source fails or serves an invalid card', async () => {
    const s = setup();
    await s.resolve();
    s.set({
      ok: false,
      url: 'http://agent.test/x',
      reason: 'SourceTimeout',
      message: 'no complete answer within 10s',
    });
    await s.clock.advance(10_000);
    const failed = await s.resolve();
    expect(failed!.condition).toMatchObject({ status: 'False', reason: 'SourceTimeout' });
    expect(failed!.condition.message).toContain('stays in use');
    expect((failed!.spec!.card as Record<string, unknown>).version).toBe('1');
    const { skills: _s, ...broken } = card('2') as Record<string, unknown>;
    s.set(ok(broken));
    await s.clock.advance(10_000);
    const invalid = await s.resolve();
    expect(invalid!.condition).toMatchObject({ status: 'False', reason: 'SourceCardInvalid' });
    expect(invalid!.condition.message).toContain('card.skills');
    expect((invalid!.spec!.card as Record<string, unknown>).version).toBe('1');
  });

  it('reports a source that never answered, with nothing to publish', async () => {
    const s = setup();
    s.set({
      ok: false,
      url: 'http://agent.test/',
      reason: 'SourceBlocked',
      message: 'refused by the address policy',
    });
    const r = await s.resolve();
    expect(r!.spec).toBeUndefined();
    expect(r!.condition).toMatchObject({ status: 'False', reason: 'SourceBlocked' });
    expect(r!.condition.message).toContain('no card was adopted yet');
  });

  it('retries a first adoption after 10 s, doubling up to the interval, then keeps the interval', async () => {
    const s = setup('5m');
    s.set({ ok: false, url: 'http://agent.test/', reason: 'SourceUnreachable', message: 'refused' });
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await s.resolve();
      waits.push(r!.requeueAfterMs!);
      if (i < 6) await s.clock.advance(r!.requeueAfterMs!);
    }
    expect(waits).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
    expect(s.fetches()).toBe(7);
    // Not due before the backoff is up: no fetch.
    await s.resolve();
    expect(s.fetches()).toBe(7);
    s.set(ok(card('1')));
    await s.clock.advance(300_000);
    const adopted = await s.resolve();
    expect(adopted!.condition).toMatchObject({ status: 'True' });
    expect(adopted!.requeueAfterMs).toBe(300_000);
    // Once adopted, a failure waits for the interval (the card stays served meanwhile).
    s.set({ ok: false, url: 'http://agent.test/', reason: 'SourceUnreachable', message: 'refused' });
    await s.clock.advance(300_000);
    expect((await s.resolve())!.requeueAfterMs).toBe(300_000);
  });
});

describe('fetch helpers', () => {
  it('builds the URLs to try: well-known first, then the legacy agent.json', () => {
    expect(sourceUrls({ url: 'http://a.test:8080', interval: '5m' }, 'ns')).toEqual([
      'http://a.test:8080/.well-known/agent-card.json',
      'http://a.test:8080/.well-known/agent.json',
    ]);
    expect(sourceUrls({ url: 'http://a.test/card.json', interval: '5m' }, 'ns')).toEqual([
      'http://a.test/card.json',
    ]);
    expect(sourceUrls({ service: { name: 'agent', port: 9000 }, interval: '5m' }, 'team')).toEqual([
      'http://agent.team.svc:9000/.well-known/agent-card.json',
      'http://agent.team.svc:9000/.well-known/agent.json',
    ]);
    expect(
      sourceUrls(
        { service: { name: 'agent', port: 'http', scheme: 'https' }, path: '/c', interval: '5m' },
        'team',
        8443,
      ),
    ).toEqual(['https://agent.team.svc:8443/c']);
  });

  it('classifies fetch failures', () => {
    expect(
      classifyFetchError(
        'redirect',
        'HTTP 302 redirect to http://169.254.169.254/ not followed (discovery follows no redirects)',
      ),
    ).toEqual({
      reason: 'SourceRedirected',
      message: 'HTTP 302 redirect to http://169.254.169.254/ not followed (redirects are never followed)',
    });
    expect(classifyFetchError('too-large', 'x').reason).toBe('SourceTooLarge');
    expect(classifyFetchError('timeout', 'x').reason).toBe('SourceTimeout');
    expect(classifyFetchError('blocked', 'x').reason).toBe('SourceBlocked');
    expect(classifyFetchError('not-json', 'x').reason).toBe('SourceNotJSON');
    expect(classifyFetchError('weird' as FetchErrorCode, 'x').reason).toBe('SourceHTTPError');
  });
});

describe('after a restart (the card last published)', () => {
  const down: SourceResult = {
    ok: false,
    url: 'http://agent.test/.well-known/agent-card.json',
    reason: 'SourceUnreachable',
    message: 'connection refused',
  };
  const status = {
    url: 'http://agent.test/.well-known/agent-card.json',
    digest: sourceDigest(JSON.stringify(card('1'))),
    protocolVersion: '1.0' as const,
    fetchTime: '2026-12-01T00:00:00.000Z',
    changes: 2,
    signature: { result: 'Unsigned' as const },
  };
  // As published: spec.remove already applied (one skill of two left), signed by the operator.
  const publishedCard = {
    ...card('1'),
    description: 'fixed',
    signatures: [{ protected: 'x', signature: 'y' }],
  };

  function restarted(answer: SourceResult) {
    let current = answer;
    const clock = new ManualClock();
    const tracker = new SourceTracker({
      clock,
      fetch: async () => current,
      servicePort: async () => undefined,
    });
    const spec = {
      source: { url: 'http://agent.test/', interval: '10s' },
      remove: ['/skills/0'],
      card: { description: 'fixed' },
    };
    const resolve = (published = true) =>
      tracker.resolve(
        'ns/a',
        {
          namespace: 'ns',
          spec,
          ...(published ? { published: () => ({ card: JSON.stringify(publishedCard), status }) } : {}),
        },
        new Date(),
        new AbortController().signal,
      );
    return { resolve, clock, set: (r: SourceResult) => (current = r) };
  }

  it('keeps the published card as it is, status.source unchanged, while the source is down', async () => {
    const t = restarted(down);
    const out = (await t.resolve())!;
    const { signatures: _s, ...unsigned } = publishedCard;
    // Not merged again: spec.remove would have dropped the one skill left.
    expect(out.spec).toMatchObject({ card: unsigned });
    expect(out.status).toEqual(status);
    expect(out.condition).toMatchObject({ status: 'False', reason: 'SourceUnreachable' });
    expect(out.condition.message).toContain('the card last published');
  });

  it('adopts at once a card changed on the agent meanwhile, counted as a change', async () => {
    const t = restarted(down);
    await t.resolve();
    await t.clock.advance(10_000);
    t.set(ok(card('2')));
    const out = (await t.resolve())!;
    expect(out.condition.reason).toBe('Adopted');
    expect(out.status).toMatchObject({ digest: sourceDigest(JSON.stringify(card('2'))), changes: 3 });
    expect(out.events.map((e) => e.reason)).toEqual(['SourceChanged']);
    // spec.remove and spec.card apply to the agent's own card again.
    expect(out.spec).toMatchObject({ card: { version: '2', description: 'fixed' } });
  });

  it('takes the agent back with the same card without a change', async () => {
    const t = restarted(down);
    await t.resolve();
    await t.clock.advance(10_000);
    t.set(ok(card('1')));
    const out = (await t.resolve())!;
    expect(out.condition.reason).toBe('Adopted');
    expect(out.status).toEqual(status);
    expect(out.events).toEqual([]);
  });

  it('has nothing to restore without status.source or a published card', async () => {
    const t = restarted(down);
    const out = (await t.resolve(false))!;
    expect(out.spec).toBeUndefined();
    expect(out.condition.message).toContain('no card was adopted yet');
  });
});
