import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ControllerMetrics } from '../../../operator/controllers/metrics.ts';

describe('ControllerMetrics', () => {
  it('keeps one ready series per condition value and one info series per card', async () => {
    const registry = new Registry();
    const m = new ControllerMetrics(registry);
    m.setCard('ns', 'a', { ready: 'False' });
    m.setCard('ns', 'a', { ready: 'True', version: '1.0.0', digest: 'sha256:aa' });
    m.setCard('ns', 'a', { ready: 'True', version: '1.1.0', digest: 'sha256:bb' });
    const text = await registry.metrics();
    expect(text).toContain('agentcard_ready{namespace="ns",name="a",condition="True"} 1');
    expect(text).toContain('agentcard_ready{namespace="ns",name="a",condition="False"} 0');
    expect(text).toContain('agentcard_info{namespace="ns",name="a",version="1.1.0",digest="sha256:bb"} 1');
    expect(text).not.toContain('version="1.0.0"');
    m.forgetCard('ns', 'a');
    const after = await registry.metrics();
    expect(after).not.toContain('name="a"');
  });
});

describe('ControllerMetrics: conditions and missing sidecars', () => {
  it('replaces a card’s condition series when a reason changes and forgets them with the card', async () => {
    const registry = new Registry();
    const m = new ControllerMetrics(registry);
    m.setCard('ns', 'a', {
      ready: 'False',
      conditions: [{ type: 'Signed', status: 'False', reason: 'SigningKeyNotFound' }],
      podsMissingSidecar: 2,
    });
    m.setCard('ns', 'a', {
      ready: 'True',
      conditions: [{ type: 'Signed', status: 'True', reason: 'Signed' }],
      podsMissingSidecar: 0,
    });
    const text = await registry.metrics();
    expect(text).toContain(
      'agentcard_condition{namespace="ns",name="a",type="Signed",status="True",reason="Signed"} 1',
    );
    expect(text).not.toContain('SigningKeyNotFound');
    expect(text).toContain('agentcard_pods_missing_sidecar{namespace="ns",name="a"} 0');
    m.forgetCard('ns', 'a');
    expect(await registry.metrics()).not.toContain('name="a"');
  });
});

describe('ControllerMetrics: cards with the same conditions', () => {
  it("reports each card's own conditions when many share a list and one changes", async () => {
    const registry = new Registry();
    const m = new ControllerMetrics(registry);
    const ready = [{ type: 'Ready', status: 'True', reason: 'Ready' }];
    // More cards than the table of shared lists holds, so that it also starts over once.
    for (let i = 0; i < 1_100; i++)
      m.setCard('ns', `c${i}`, {
        ready: 'True',
        conditions: i % 2 ? ready : [{ type: 'Ready', status: 'False', reason: `Reason${i}` }],
      });
    m.setCard('ns', 'c1', {
      ready: 'False',
      conditions: [{ type: 'Ready', status: 'False', reason: 'Down' }],
    });
    const lines = (await registry.metrics()).split('\n').filter((l) => l.startsWith('agentcard_condition{'));
    expect(lines).toHaveLength(1_100);
    expect(lines).toContain(
      'agentcard_condition{namespace="ns",name="c1",type="Ready",status="False",reason="Down"} 1',
    );
    expect(lines).toContain(
      'agentcard_condition{namespace="ns",name="c3",type="Ready",status="True",reason="Ready"} 1',
    );
    expect(lines).toContain(
      'agentcard_condition{namespace="ns",name="c1098",type="Ready",status="False",reason="Reason1098"} 1',
    );
  });
});

describe('ControllerMetrics: series built at scrape time', () => {
  it('reflects the latest state of every card, and forgetting one card leaves the others', async () => {
    const registry = new Registry();
    const m = new ControllerMetrics(registry);
    m.setCard('ns', 'a', { ready: 'True', version: '1.0.0', digest: 'sha256:aa', podsMissingSidecar: 1 });
    m.setCard('ns', 'b', { ready: 'Unknown' });
    expect(await registry.metrics()).toContain('agentcard_pods_missing_sidecar{namespace="ns",name="a"} 1');
    // A card that lost its published version has no info series.
    m.setCard('ns', 'a', { ready: 'False', version: '1.0.0' });
    m.forgetCard('ns', 'b');
    const text = await registry.metrics();
    expect(text).toContain('agentcard_ready{namespace="ns",name="a",condition="False"} 1');
    expect(text).toContain('agentcard_ready{namespace="ns",name="a",condition="True"} 0');
    expect(text).toContain('# TYPE agentcard_info gauge');
    expect(text).not.toContain('agentcard_info{');
    expect(text).not.toContain('name="b"');
    const json = await registry.getMetricsAsJSON();
    expect(json.find((x) => x.name === 'agentcard_ready')?.values).toHaveLength(3);
  });
});
