import { describe, expect, it } from 'vitest';
import { createSidecarMetrics, label } from '../../../operator/sidecar/metrics.ts';

describe('sidecar metrics', () => {
  it('renders counters, the card info and process gauges in the text format', () => {
    const m = createSidecarMetrics();
    expect(m.render()).toContain('agentcard_sidecar_card_loaded 0\n');
    m.request('/.well-known/agent-card.json', 200);
    m.request('/.well-known/agent-card.json', 200);
    m.request('other', 404);
    m.loaded('sha256:abc', '1.0.0');
    m.refused();
    const text = m.render();
    expect(text).toContain('# TYPE agentcard_sidecar_requests_total counter\n');
    expect(text).toContain(
      'agentcard_sidecar_requests_total{path="/.well-known/agent-card.json",code="200"} 2\n',
    );
    expect(text).toContain('agentcard_sidecar_requests_total{path="other",code="404"} 1\n');
    expect(text).toContain('agentcard_sidecar_card_info{digest="sha256:abc",version="1.0.0"} 1\n');
    expect(text).toContain('agentcard_sidecar_card_loaded 1\n');
    expect(text).toContain('agentcard_sidecar_reload_failures_total 1\n');
    expect(text).toMatch(/^process_resident_memory_bytes \d+$/m);
    // Every sample line belongs to a family announced with HELP and TYPE.
    const families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((x) => x[1]));
    for (const line of text.split('\n').filter((l) => l && !l.startsWith('#'))) {
      expect(families.has(line.split(/[{ ]/, 1)[0])).toBe(true);
    }
  });

  it('escapes label values (a card version is user input)', () => {
    expect(label('a"b\\c\nd')).toBe('a\\"b\\\\c\\nd');
    const m = createSidecarMetrics();
    m.loaded('sha256:x', '1.0"\n');
    expect(m.render()).toContain('version="1.0\\"\\n"} 1');
  });
});
