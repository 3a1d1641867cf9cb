import { describe, expect, it } from 'vitest';
import { validateSourceResource, validateResource } from '../../../operator/card/validate.ts';
import { resolveSourceSpec } from '../../../operator/source/resolve.ts';

const served = {
  name: 'Weather',
  description: 'Forecasts the weather.',
  version: '1.0.0',
  url: 'https://weather.example.com/a2a',
  preferredTransport: 'JSONRPC',
  protocolVersion: '0.3.0',
  capabilities: { streaming: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'f', name: 'F', description: 'Forecast.', tags: ['w'], examples: ['x'] }],
  signatures: [{ protected: 'x', signature: 'y' }],
};

const manifest = (spec: Record<string, unknown>) => ({
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'AgentCard',
  metadata: { name: 'weather' },
  spec,
});

describe('resolveSourceSpec', () => {
  it('converts, removes, overlays and drops source and remove, as the controller does', () => {
    const spec = {
      source: { url: 'https://weather.example.com/' },
      remove: ['/skills/0/examples', '/nothing'],
      card: { description: 'Forecasts the weather for a place and a day.' },
      serving: { server: 'Central' },
    };
    const r = resolveSourceSpec(spec, served);
    expect(r.converted.protocolVersion).toBe('0.3');
    expect(r.unmatched).toEqual(['/nothing']);
    expect(r.spec).not.toHaveProperty('source');
    expect(r.spec).not.toHaveProperty('remove');
    expect(r.spec.serving).toEqual({ server: 'Central' });
    const card = r.spec.card as Record<string, unknown>;
    expect(card.description).toBe('Forecasts the weather for a place and a day.');
    expect(card).not.toHaveProperty('signatures');
    expect(card.supportedInterfaces).toEqual([
      { url: 'https://weather.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    expect((card.skills as Record<string, unknown>[])[0]).not.toHaveProperty('examples');
    expect(validateResource(manifest(r.spec)).card).toBeDefined();
  });
});

describe('validateSourceResource', () => {
  it('accepts a spec with source and a partial overlay', () => {
    const r = validateSourceResource(
      manifest({ source: { service: { name: 'w', port: 'http' } }, card: { description: 'x' } }),
    );
    expect(r.problems.filter((p) => p.severity === 'error')).toEqual([]);
  });

  it('reports bad pointers, both url and service, unknown overlay fields and the envelope', () => {
    const r = validateSourceResource({
      ...manifest({
        source: { url: 'https://a.example/', service: { name: 'w', port: 80 } },
        remove: ['skills'],
        card: { colour: 'blue' },
      }),
      metadata: { name: 'Not_A_Name' },
    });
    const paths = r.problems.map((p) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining(['metadata.name', 'spec.source', 'spec.remove[0]', 'spec.card.colour']),
    );
  });

  it('refuses a credential in the overlay, without repeating it', () => {
    const r = validateSourceResource(
      manifest({
        source: { url: 'https://a.example/' },
        card: { description: 'token sk-live-0123456789abcdefghijklmnopqrstuv' },
      }),
    );
    expect(r.problems.some((p) => p.severity === 'error')).toBe(true);
    expect(JSON.stringify(r.problems)).not.toContain('sk-live-0123456789abcdefghijklmnopqrstuv');
  });
});
