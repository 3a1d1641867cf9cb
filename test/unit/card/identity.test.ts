import { describe, expect, it } from 'vitest';
import {
  checkIdentityTemplate,
  DEFAULT_IDENTITY_TEMPLATE,
  renderIdentity,
} from '../../../operator/card/identity.ts';

const values = {
  trustDomain: 'cluster.local',
  namespace: 'agents',
  serviceAccount: 'weather',
  name: 'weather',
};

describe('signing identities', () => {
  it('renders the default SPIFFE ID from the namespace and service account', () => {
    expect(renderIdentity(DEFAULT_IDENTITY_TEMPLATE, values)).toBe(
      'spiffe://cluster.local/ns/agents/sa/weather',
    );
  });

  it('refuses values that would escape their path segment', () => {
    expect(() =>
      renderIdentity(DEFAULT_IDENTITY_TEMPLATE, { ...values, serviceAccount: 'a/../../x' }),
    ).toThrow(/serviceAccount "a\/\.\.\/\.\.\/x" cannot be put in an identity/);
    expect(() => renderIdentity(DEFAULT_IDENTITY_TEMPLATE, { ...values, serviceAccount: 'a..b' })).toThrow();
    expect(() =>
      renderIdentity(DEFAULT_IDENTITY_TEMPLATE, { ...values, trustDomain: 'Bad Domain' }),
    ).toThrow();
  });

  it('checks the administrator template: known variables, {namespace} required, a URI', () => {
    expect(() => checkIdentityTemplate(DEFAULT_IDENTITY_TEMPLATE, 'example.org')).not.toThrow();
    expect(() => checkIdentityTemplate('spiffe://{trustDomain}/sa/{serviceAccount}', 'example.org')).toThrow(
      /must contain \{namespace\}/,
    );
    expect(() => checkIdentityTemplate('spiffe://{trustDomain}/ns/{namespace}/{pod}', 'example.org')).toThrow(
      /unknown variable \{pod\}/,
    );
    expect(() => checkIdentityTemplate(DEFAULT_IDENTITY_TEMPLATE, 'EXAMPLE')).toThrow(/trust domain/);
    expect(() => checkIdentityTemplate('{namespace}-{name}', 'example.org')).toThrow(/does not give a URI/);
  });
});
