import { describe, expect, it } from 'vitest';
import {
  importEvents,
  importStatus,
  MAX_REFUSAL_EVENTS,
  type RunSummary,
} from '../../../../operator/controllers/imports/plan.ts';
import type { RefusedEntry } from '../../../../operator/federation/crawl.ts';

const HOUR = 3_600_000;
const t0 = Date.parse('2026-01-01T00:00:00Z');

const refusal = (what: string, reason: RefusedEntry['reason'] = 'SignatureInvalid'): RefusedEntry => ({
  key: what,
  what,
  catalogUrl: 'https://a.example/.well-known/ai-catalog.json',
  reason,
  message: 'the card was changed after it was signed',
});

const fetched = (extra: Partial<Extract<RunSummary, { kind: 'fetched' }>> = {}): RunSummary => ({
  kind: 'fetched',
  origin: 'Cluster A',
  digest: `sha256:${'a'.repeat(64)}`,
  catalogs: 1,
  imported: 2,
  stale: 0,
  refused: [],
  configMaps: 1,
  ...extra,
});

const cond = (
  status: { conditions?: Array<{ type: string; status: string; reason: string }> },
  type: string,
) => status.conditions?.find((c) => c.type === type);

describe('importStatus', () => {
  it('is Ready when fetched, with counts by reason', () => {
    const { status, changed } = importStatus({
      generation: 1,
      previous: undefined,
      run: fetched({ refused: [refusal('x'), refusal('y', 'IdentityNotAllowed')] }),
      now: new Date(t0),
      lastSuccess: t0,
      maxStalenessMs: HOUR,
    });
    expect(changed).toBe(true);
    expect(cond(status, 'Ready')).toMatchObject({ status: 'True', reason: 'Ready' });
    expect(status).toMatchObject({
      imported: 2,
      stale: 0,
      refused: { SignatureInvalid: 1, IdentityNotAllowed: 1 },
      lastSuccessTime: '2026-01-01T00:00:00Z',
    });
    expect(status.refusedEntries).toHaveLength(2);
  });

  it('writes nothing for an unchanged run, and refreshes lastSuccessTime every maxStaleness / 2', () => {
    const first = importStatus({
      generation: 1,
      previous: undefined,
      run: fetched(),
      now: new Date(t0),
      lastSuccess: t0,
      maxStalenessMs: HOUR,
    });
    const again = importStatus({
      generation: 1,
      previous: first.status,
      run: fetched(),
      now: new Date(t0 + 5 * 60_000),
      lastSuccess: t0 + 5 * 60_000,
      maxStalenessMs: HOUR,
    });
    expect(again.changed).toBe(false);
    expect(again.status).toEqual(first.status);
    const heartbeat = importStatus({
      generation: 1,
      previous: first.status,
      run: fetched(),
      now: new Date(t0 + HOUR / 2),
      lastSuccess: t0 + HOUR / 2,
      maxStalenessMs: HOUR,
    });
    expect(heartbeat.changed).toBe(true);
    expect(heartbeat.status.lastSuccessTime).toBe('2026-01-01T00:30:00Z');
  });

  it('says what is kept while the origin is down, and keeps the last success time', () => {
    const first = importStatus({
      generation: 1,
      previous: undefined,
      run: fetched(),
      now: new Date(t0),
      lastSuccess: t0,
      maxStalenessMs: HOUR,
    });
    const down = importStatus({
      generation: 1,
      previous: first.status,
      run: fetched({
        failure: { reason: 'Unreachable', message: 'connection refused' },
        stale: 2,
        digest: undefined,
        catalogs: undefined,
      }),
      now: new Date(t0 + 60_000),
      lastSuccess: t0,
      maxStalenessMs: HOUR,
    });
    expect(down.changed).toBe(true);
    expect(cond(down.status, 'Fetched')).toMatchObject({ status: 'False', reason: 'Unreachable' });
    expect(cond(down.status, 'Ready')).toMatchObject({ status: 'False', reason: 'Unreachable' });
    expect(down.status).toMatchObject({
      stale: 2,
      imported: 2,
      lastSuccessTime: '2026-01-01T00:00:00Z',
      digest: first.status.digest,
    });
  });

  it('refuses an invalid spec without forgetting the last counts', () => {
    const first = importStatus({
      generation: 1,
      previous: undefined,
      run: fetched(),
      now: new Date(t0),
      lastSuccess: t0,
      maxStalenessMs: HOUR,
    });
    const invalid = importStatus({
      generation: 2,
      previous: first.status,
      run: { kind: 'invalid', message: 'spec.url: must be an https URL' },
      now: new Date(t0),
      maxStalenessMs: HOUR,
    });
    expect(cond(invalid.status, 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(invalid.status.imported).toBe(2);
  });
});

describe('importEvents', () => {
  it('reports a failure once per distinct problem, and the recovery', () => {
    const ok = importStatus({
      generation: 1,
      previous: undefined,
      run: fetched(),
      now: new Date(t0),
      lastSuccess: t0,
      maxStalenessMs: HOUR,
    }).status;
    const down = importStatus({
      generation: 1,
      previous: ok,
      run: fetched({ failure: { reason: 'Unreachable', message: 'connection refused' } }),
      now: new Date(t0),
      lastSuccess: t0,
      maxStalenessMs: HOUR,
    }).status;
    const known = new Set<string>();
    expect(importEvents(ok.conditions, down.conditions, [], known).map((e) => e.reason)).toEqual([
      'Unreachable',
    ]);
    expect(importEvents(down.conditions, down.conditions, [], known)).toEqual([]);
    expect(
      importEvents(down.conditions, ok.conditions, [], known).map((e) => `${e.type} ${e.reason}`),
    ).toEqual(['Normal Fetched']);
  });

  it('reports each newly refused entry once, at most a few by name', () => {
    const known = new Set<string>();
    const many = Array.from({ length: MAX_REFUSAL_EVENTS + 5 }, (_, i) => refusal(`agent-${i}`));
    const first = importEvents([], [], many, known);
    expect(first).toHaveLength(MAX_REFUSAL_EVENTS + 1);
    expect(first.at(-1)!.message).toMatch(/^5 more entries refused/);
    expect(importEvents([], [], many, known)).toEqual([]);
    expect(
      importEvents([], [], [...many, refusal('agent-0', 'Unreachable')], known).map((e) => e.reason),
    ).toEqual(['Unreachable']);
  });
});
