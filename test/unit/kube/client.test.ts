import { describe, expect, it } from 'vitest';
import { parseAnswer } from '../../../operator/kube/client.ts';

describe('parseAnswer', () => {
  it('parses JSON, and never quotes an answer that is not JSON (it may hold a Secret)', () => {
    expect(parseAnswer('{"kind":"Secret"}', 'GET', '/api/v1/x')).toEqual({ kind: 'Secret' });
    const truncated = '{"kind":"Secret","data":{"jwk":"c2VjcmV0LWtleS1tYXRlcmlhbA';
    let caught: unknown;
    try {
      parseAnswer(truncated, 'GET', '/api/v1/namespaces/a/secrets/key');
    } catch (err) {
      caught = err;
    }
    expect((caught as Error).message).toBe(
      "the API server's answer to GET /api/v1/namespaces/a/secrets/key is not JSON",
    );
    expect((caught as Error).message).not.toContain('c2VjcmV0');
  });
});
