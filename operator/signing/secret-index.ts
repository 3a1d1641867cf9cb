import { signingCertificateName } from '../api/names.ts';
/**
 * Which AgentCards reference which Secrets (spec.signing.keys[].secretRef,
 * spec.signing.keys[].certificate.secretName and spec.probe.credentials[].secretRef, always in the
 * AgentCard's namespace; spec.signing.keys[].issuerRef refers to the card's issued Secret), so that a change of a
 * watched Secret re-queues exactly the cards that use it. Keys are "namespace/name".
 */
export class SecretIndex {
  /** Secret key → the cards that use it, and the one copy of the key the cards' lists share. */
  private readonly bySecret = new Map<string, { key: string; cards: Set<string> }>();
  /**
   * A card's Secrets as a small array, not a Set: a card names one or two, and a Set of one took
   * about 90 bytes more: 3.5 MiB for the index at 10,000 cards, 2.6 MiB since (docs/scaling.md).
   */
  private readonly byCard = new Map<string, readonly string[]>();

  /** Replaces the Secrets referenced by one card. */
  set(cardKey: string, secretKeys: Iterable<string>): void {
    this.delete(cardKey);
    const secrets: string[] = [];
    for (const key of new Set(secretKeys)) {
      let secret = this.bySecret.get(key);
      if (!secret) this.bySecret.set(key, (secret = { key, cards: new Set() }));
      secret.cards.add(cardKey);
      secrets.push(secret.key);
    }
    if (secrets.length > 0) this.byCard.set(cardKey, secrets);
  }

  delete(cardKey: string): void {
    const secrets = this.byCard.get(cardKey);
    if (!secrets) return;
    this.byCard.delete(cardKey);
    for (const s of secrets) {
      const cards = this.bySecret.get(s)?.cards;
      cards?.delete(cardKey);
      if (cards?.size === 0) this.bySecret.delete(s);
    }
  }

  cardsFor(secretKey: string): string[] {
    return [...(this.bySecret.get(secretKey)?.cards ?? [])];
  }

  secretsOf(cardKey: string): string[] {
    return [...(this.byCard.get(cardKey) ?? [])];
  }
}

/**
 * The Secret names a spec refers to (read leniently: the spec may be invalid). With `cardName`, a
 * key that names an issuerRef refers to the Secret cert-manager issues for the card
 * (signingCertificateName).
 */
export function referencedSecretNames(spec: unknown, cardName?: string): string[] {
  const names = new Set<string>();
  const s = spec as {
    signing?: {
      keys?: Array<{
        secretRef?: { name?: unknown };
        certificate?: { secretName?: unknown };
        issuerRef?: unknown;
      }>;
    };
    probe?: { credentials?: Array<{ secretRef?: { name?: unknown } }> };
  };
  const add = (list: Array<{ secretRef?: { name?: unknown } }> | undefined) => {
    if (!Array.isArray(list)) return;
    for (const item of list) {
      const name = item?.secretRef?.name;
      if (typeof name === 'string' && name) names.add(name);
    }
  };
  add(s?.signing?.keys);
  if (Array.isArray(s?.signing?.keys)) {
    for (const item of s.signing.keys) {
      const name = item?.certificate?.secretName;
      if (typeof name === 'string' && name) names.add(name);
      if (cardName !== undefined && item?.issuerRef) names.add(signingCertificateName(cardName));
    }
  }
  add(s?.probe?.credentials);
  return [...names];
}
