/**
 * The line of a card path in the file the card came from (operator/cli/card-lines.ts), for the
 * GitHub Actions annotations of `agentcard diff`.
 */
import { describe, expect, it } from 'vitest';
import { cardLines, parsePath } from '../../../operator/cli/card-lines.ts';

const manifest = `apiVersion: v1
kind: Secret
metadata:
  name: key
---
apiVersion: agentcard.dev/v1alpha1
kind: AgentCard
metadata:
  name: weather
spec:
  card:
    name: Weather
    version: 1.0.0
    securitySchemes:
      "my scheme":
        apiKeySecurityScheme: { location: header, name: X-Key }
    skills:
      - id: forecast
        name: Forecast
        tags: [weather]
      - id: alerts
        name: Alerts
---
apiVersion: agentcard.dev/v1alpha1
kind: AgentCard
metadata:
  name: other
spec:
  card:
    version: 9.0.0
`;

describe('card paths to lines', () => {
  it('parses the paths the engine writes', () => {
    expect(parsePath('skills[0].tags')).toEqual(['skills', 0, 'tags']);
    expect(parsePath('securitySchemes["my scheme"].apiKeySecurityScheme')).toEqual([
      'securitySchemes',
      'my scheme',
      'apiKeySecurityScheme',
    ]);
    expect(parsePath('version')).toEqual(['version']);
  });

  it("finds a manifest's spec.card fields, in the AgentCard of that name", () => {
    const line = cardLines(manifest, undefined);
    expect(line('version', false)).toBe(13);
    expect(line('skills[1]', false)).toBe(21);
    expect(line('skills[0].tags', false)).toBe(20);
    expect(line('securitySchemes["my scheme"].apiKeySecurityScheme', false)).toBe(16);
    expect(cardLines(manifest, 'other')('version', false)).toBe(30);
  });

  it('places an item that is gone at its enclosing field, never at a list entry', () => {
    const line = cardLines(manifest, 'weather');
    expect(line('skills[1]', true)).toBe(17); // skills:, not the entry now at index 1
    expect(line('skills[3].inputModes', true)).toBe(17);
    expect(line('securitySchemes.oauth', true)).toBe(14);
    expect(line('iconUrl', true)).toBe(11); // card:
  });

  it('reads a bare JSON card, and knows nothing of a file it cannot read', () => {
    const json = '{\n  "name": "x",\n  "skills": [\n    {"id": "a"}\n  ]\n}\n';
    expect(cardLines(json, undefined)('skills[0]', false)).toBe(4);
    expect(cardLines(json, 'y')('name', false)).toBeUndefined();
    expect(cardLines('a: [', undefined)('name', false)).toBeUndefined();
  });
});
