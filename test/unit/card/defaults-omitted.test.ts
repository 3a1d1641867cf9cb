/**
 * The defaults-omitted reading of a card (jcs.ts) against @a2a-js/sdk's own canonicalizer: the
 * same bytes for cards written the way SDK users write them, so that SDK-signed cards verify.
 */
import { canonicalizeAgentCard, type AgentCard as SdkCard } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { defaultsOmittedPayload, signingPayload } from '../../../operator/card/jcs.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { fullCard, minimalCard } from '../../support/cards.ts';

/** A card with the default values an SDK user typically writes. */
function sdkStyleCard(): Record<string, unknown> {
  return {
    ...minimalCard(),
    supportedInterfaces: [
      { url: 'https://a.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
    ],
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extensions: [{ uri: 'https://ext.example/v1', description: '', required: false }],
    },
    securitySchemes: {},
    securityRequirements: [],
    skills: [
      {
        id: 's',
        name: 'S',
        description: 'A skill.',
        tags: ['t'],
        examples: [],
        inputModes: [],
        outputModes: [],
      },
    ],
    signatures: [{ protected: 'eyJhbGciOiJFUzI1NiJ9', signature: 'AAAA' }],
  };
}

const sdk = (card: Record<string, unknown>) => canonicalizeAgentCard(card as unknown as SdkCard);

describe('defaultsOmittedPayload', () => {
  it.each([
    ['SDK-style card with default values', sdkStyleCard],
    ['minimal card', () => renderV1(validateCard(minimalCard()).card!)],
    ['card using every message', () => renderV1(validateCard(fullCard()).card!)],
  ])('equals @a2a-js/sdk canonicalizeAgentCard: %s', (_name, make) => {
    const card = make();
    expect(defaultsOmittedPayload(card)).toBe(sdk(card));
  });

  it('differs from the spec payload exactly when the card holds default values', () => {
    const plain = renderV1(validateCard(fullCard()).card!);
    expect(defaultsOmittedPayload(plain)).toBe(signingPayload(plain));
    const withDefaults = sdkStyleCard();
    expect(defaultsOmittedPayload(withDefaults)).not.toBe(signingPayload(withDefaults));
    expect(defaultsOmittedPayload(withDefaults)).not.toContain('"tenant"');
    expect(defaultsOmittedPayload(withDefaults)).not.toContain('"required"');
    // optional bools keep an explicit false (proto3 `optional`: presence is meaning)
    expect(defaultsOmittedPayload(withDefaults)).toContain('"streaming":false');
  });

  it('keeps members outside the schema (the SDK drops them, leaving them unsigned)', () => {
    const card = { ...sdkStyleCard(), injected: 'https://evil.example' };
    expect(defaultsOmittedPayload(card)).toContain('"injected":"https://evil.example"');
    expect(sdk(card)).not.toContain('injected');
  });

  it('does not change its input', () => {
    const card = sdkStyleCard();
    const before = JSON.stringify(card);
    defaultsOmittedPayload(card);
    expect(JSON.stringify(card)).toBe(before);
  });
});
