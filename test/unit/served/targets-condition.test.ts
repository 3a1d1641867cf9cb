import { describe, expect, it } from 'vitest';
import type { ServedComparison } from '../../../operator/served/compare.ts';
import { deliveredCondition } from '../../../operator/served/condition.ts';
import { MAX_SERVED_TARGETS, servedTargets } from '../../../operator/served/targets.ts';
import type { AgentCardSpec } from '../../../operator/card/resource.ts';

type Audiences = NonNullable<AgentCardSpec['audiences']>;
const audience = (a: Partial<Audiences[number]> & { name: string; hosts: string[] }): Audiences[number] =>
  ({ probe: 'Enabled', ...a }) as Audiences[number];

describe('servedTargets', () => {
  it('asks only the audiences that opt in, at each exact host, over https by default', () => {
    const { targets, skipped } = servedTargets({
      audiences: [
        audience({ name: 'public', hosts: ['Weather.Example.com', '*.example.org'], verifyServed: true }),
        audience({ name: 'partners', hosts: ['partners.example.com'] }),
      ],
    });
    expect(targets).toEqual([
      {
        audience: 'public',
        host: 'weather.example.com',
        url: 'https://weather.example.com/.well-known/agent-card.json',
      },
    ]);
    expect(skipped).toEqual(['*.example.org']);
  });

  it('takes scheme and port from baseURL when it names the host, never its path', () => {
    const { targets } = servedTargets({
      audiences: [
        audience({
          name: 'public',
          hosts: ['edge.example.com', 'other.example.com'],
          baseURL: 'http://edge.example.com:8443/agents/weather',
          verifyServed: true,
        }),
      ],
    });
    expect(targets.map((t) => t.url)).toEqual([
      'http://edge.example.com:8443/.well-known/agent-card.json',
      'https://other.example.com/.well-known/agent-card.json',
    ]);
  });

  it('caps the hosts of one card', () => {
    const hosts = Array.from({ length: 16 }, (_, i) => `h${i}.example.com`);
    const { targets, skipped } = servedTargets({
      audiences: [
        audience({ name: 'a', hosts, verifyServed: true }),
        audience({ name: 'b', hosts: ['b.example.com'], verifyServed: true }),
      ],
    });
    expect(targets).toHaveLength(MAX_SERVED_TARGETS);
    expect(skipped).toEqual(['b.example.com']);
  });
});

const verdict = (
  host: string,
  comparison: Partial<ServedComparison> & Pick<ServedComparison, 'verdict' | 'detail'>,
) => ({
  audience: 'public',
  host,
  comparison: { paths: [], differences: 0, ...comparison },
});

describe('deliveredCondition', () => {
  it('is True when every host serves the signed card', () => {
    const c = deliveredCondition(
      [verdict('a.example.com', { verdict: 'ServedAsSigned', detail: 'the published card' })],
      [],
      3,
    );
    expect(c).toEqual({
      type: 'Delivered',
      status: 'True',
      reason: 'ServedAsSigned',
      message: 'a.example.com: ServedAsSigned, the published card',
      observedGeneration: 3,
    });
  });

  it('takes the worst verdict: Rewritten before SignatureBroken before Unreachable', () => {
    const c = deliveredCondition(
      [
        verdict('a.example.com', { verdict: 'Unreachable', detail: 'connection refused' }),
        verdict('b.example.com', { verdict: 'ServedAsSigned', detail: 'ok' }),
        verdict('c.example.com', { verdict: 'SignatureBroken', detail: 'the signatures are missing' }),
        verdict('d.example.com', {
          verdict: 'Rewritten',
          detail: 'differs at supportedInterfaces[0].url',
          paths: ['supportedInterfaces[0].url'],
        }),
      ],
      ['*.example.org'],
      1,
    );
    expect(c.status).toBe('False');
    expect(c.reason).toBe('Rewritten');
    expect(c.message).toBe(
      'd.example.com: Rewritten, differs at supportedInterfaces[0].url; c.example.com: SignatureBroken, the signatures are missing; a.example.com: Unreachable, connection refused; b.example.com: ServedAsSigned, ok; not checked: *.example.org (wildcard or over the limit)',
    );
  });

  it('is Unknown when a host cannot be reached and none is worse', () => {
    const c = deliveredCondition(
      [
        verdict('a.example.com', { verdict: 'ServedAsSigned', detail: 'ok' }),
        verdict('b.example.com', { verdict: 'Unreachable', detail: 'no answer within 5s' }),
      ],
      [],
      1,
    );
    expect([c.status, c.reason]).toEqual(['Unknown', 'Unreachable']);
  });

  it('says so when only wildcards opt in', () => {
    const c = deliveredCondition([], ['*.example.org'], 1);
    expect([c.status, c.reason]).toEqual(['Unknown', 'NothingToCheck']);
    expect(c.message).toContain('*.example.org');
  });

  it('does not depend on the order of the round (an unchanged verdict writes nothing)', () => {
    const a = verdict('a.example.com', { verdict: 'Unreachable', detail: 'x' });
    const b = verdict('b.example.com', { verdict: 'Unreachable', detail: 'y' });
    expect(deliveredCondition([a, b], [], 1)).toEqual(deliveredCondition([b, a], [], 1));
  });
});
