import { describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../../operator/card/keygen.ts';
import { serializeCard } from '../../../../operator/card/serialize.ts';
import { HISTORY_LIMIT, type HistoryEntry } from '../../../../operator/card/resource.ts';
import {
  appendHistory,
  changeEvent,
  decideChange,
  heldChangeDigest,
} from '../../../../operator/controllers/agentcard/changes.ts';
import { planReconcile, type PlanInput } from '../../../../operator/controllers/agentcard/plan.ts';
import { disabledVerdict } from '../../../../operator/controllers/agentcard/probes.ts';
import type { AgentCardObject } from '../../../../operator/api/objects.ts';
import { ACCEPT_BREAKING_ANNOTATION } from '../../../../operator/api/names.ts';
import { digestOf } from '../../../../operator/runtime/configmaps.ts';
import type { SecretView } from '../../../../operator/signing/keys.ts';
import { sampleCard } from '../../../support/cards.ts';

const forecast = { id: 'forecast', name: 'Forecast', description: 'Gives the forecast', tags: ['weather'] };
const alerts = { id: 'alerts', name: 'Alerts', description: 'Weather alerts for a city', tags: ['weather'] };
const twoSkills = (version = '1.0.0') => sampleCard(version, { skills: [forecast, alerts] });
const oneSkill = (version = '1.0.0') => sampleCard(version, { skills: [forecast] });
const text = (card: Record<string, unknown>) => serializeCard(card);
const base = { name: 'weather', namespace: 'agents' };

describe('decideChange', () => {
  it('a first publish takes its version from nextVersion, without reading nextCard', () => {
    const verdict = decideChange({ ...base, nextCard: '{"not":"a card"}', nextVersion: '3.1.0' });
    expect(verdict).toMatchObject({ action: 'publish', change: { version: '3.1.0', breaking: [] } });
  });

  it('nothing recorded and nothing served: published, no class (the first publish)', () => {
    const verdict = decideChange({ ...base, nextCard: text(twoSkills()) });
    expect(verdict).toEqual({
      action: 'publish',
      change: { version: '1.0.0', digest: digestOf(text(twoSkills())), breaking: [] },
    });
  });

  it('the card already recorded as published: no change', () => {
    const next = text(twoSkills());
    expect(decideChange({ ...base, recordedDigest: digestOf(next), liveCard: next, nextCard: next })).toEqual(
      {
        action: 'none',
      },
    );
  });

  it('the same content signed again is no change', () => {
    const before = text({ ...twoSkills(), signatures: [{ protected: 'a', signature: 'b' }] });
    const after = text({ ...twoSkills(), signatures: [{ protected: 'a', signature: 'c' }] });
    expect(
      decideChange({ ...base, recordedDigest: digestOf(before), liveCard: before, nextCard: after }),
    ).toEqual({
      action: 'none',
    });
  });

  it('classifies against the served card; Audit publishes a breaking change', () => {
    const live = text(twoSkills());
    const verdict = decideChange({
      ...base,
      recordedDigest: digestOf(live),
      liveCard: live,
      nextCard: text(oneSkill('1.1.0')),
    });
    expect(verdict.action).toBe('publish');
    if (verdict.action !== 'publish') return;
    expect(verdict.change).toMatchObject({
      version: '1.1.0',
      class: 'breaking',
      summary: expect.stringContaining('1 breaking'),
    });
    expect(verdict.change.breaking.map((c) => `${c.rule} ${c.item}`)).toEqual(['skill-removed alerts']);
    expect(verdict.change.passed).toBeUndefined();
  });

  it('Enforce holds a breaking change without a new major version, naming the items and how to accept', () => {
    const live = text(twoSkills());
    const next = oneSkill('1.1.0');
    const verdict = decideChange({ ...base, liveCard: live, nextCard: text(next), policy: 'Enforce' });
    expect(verdict.action).toBe('hold');
    if (verdict.action !== 'hold') return;
    expect(verdict.digest).toBe(heldChangeDigest(next));
    expect(verdict.message).toContain('skills[1]: skill alerts (Alerts) removed');
    expect(verdict.message).toContain('version "1.0.0" -> "1.1.0" keeps the major version');
    expect(verdict.message).toContain(
      `kubectl annotate agentcard weather -n agents ${ACCEPT_BREAKING_ANNOTATION}=${verdict.digest} --overwrite`,
    );
  });

  it('the held digest ignores signatures: the same content signed again is the same held change', () => {
    const next = oneSkill('1.1.0');
    const signedOnce = text({ ...next, signatures: [{ protected: 'a', signature: 'x' }] });
    const signedTwice = text({ ...next, signatures: [{ protected: 'a', signature: 'y' }] });
    const hold = (nextCard: string) =>
      decideChange({ ...base, liveCard: text(twoSkills()), nextCard, policy: 'Enforce' });
    const [a, b] = [hold(signedOnce), hold(signedTwice)];
    expect(a.action === 'hold' && b.action === 'hold' && a.digest === b.digest).toBe(true);
  });

  it('Enforce: a new major version, or the annotation naming this change, publishes it', () => {
    const live = text(twoSkills());
    const major = decideChange({
      ...base,
      liveCard: live,
      nextCard: text(oneSkill('2.0.0')),
      policy: 'Enforce',
    });
    expect(major).toMatchObject({
      action: 'publish',
      change: { class: 'breaking', passed: 'major-version' },
    });

    const next = oneSkill('1.1.0');
    const accepted = decideChange({
      ...base,
      liveCard: live,
      nextCard: text(next),
      policy: 'Enforce',
      accept: heldChangeDigest(next),
    });
    expect(accepted).toMatchObject({ action: 'publish', change: { class: 'breaking', passed: 'accepted' } });
  });

  it('Enforce: the annotation of an earlier change does not accept a later one', () => {
    const accept = heldChangeDigest(oneSkill('1.1.0'));
    const later = sampleCard('1.2.0', { skills: [alerts] }); // another breaking change
    const verdict = decideChange({
      ...base,
      liveCard: text(twoSkills()),
      nextCard: text(later),
      policy: 'Enforce',
      accept,
    });
    expect(verdict.action).toBe('hold');
  });

  it('Enforce: a version that is not semver cannot show a new major, and the message says so', () => {
    const verdict = decideChange({
      ...base,
      liveCard: text(twoSkills('2026-01')),
      nextCard: text(oneSkill('2027-01')),
      policy: 'Enforce',
    });
    expect(verdict.action).toBe('hold');
    if (verdict.action === 'hold') expect(verdict.message).toContain('"2026-01" is not a semantic version');
  });

  it('Enforce lets compatible and descriptive changes through', () => {
    const verdict = decideChange({
      ...base,
      liveCard: text(oneSkill()),
      nextCard: text(twoSkills('1.1.0')),
      policy: 'Enforce',
    });
    expect(verdict).toMatchObject({ action: 'publish', change: { class: 'compatible', breaking: [] } });
  });

  it('a served card that is not a valid card cannot be compared: published without a class', () => {
    const verdict = decideChange({
      ...base,
      liveCard: '{"not":"a card"',
      nextCard: text(oneSkill()),
      policy: 'Enforce',
    });
    expect(verdict).toMatchObject({ action: 'publish', change: { version: '1.0.0' } });
    if (verdict.action === 'publish') expect(verdict.change.class).toBeUndefined();
  });
});

describe('appendHistory', () => {
  const digest = (n: number) => `sha256:${n.toString(16).padStart(64, '0')}`;
  const now = new Date('2030-01-01T00:00:00.123Z');

  it('puts the newest first, with the time in RFC 3339 seconds', () => {
    const first = appendHistory(undefined, { version: '1.0.0', digest: digest(1) }, now);
    expect(first).toEqual([{ version: '1.0.0', digest: digest(1), time: '2030-01-01T00:00:00Z' }]);
    const second = appendHistory(first, { version: '1.1.0', digest: digest(2), class: 'compatible' }, now);
    expect(second.map((e) => e.digest)).toEqual([digest(2), digest(1)]);
    expect(second[0]!.class).toBe('compatible');
  });

  it(`keeps at most ${HISTORY_LIMIT} entries, dropping the oldest`, () => {
    let history: HistoryEntry[] = [];
    for (let i = 1; i <= HISTORY_LIMIT + 3; i++)
      history = appendHistory(history, { version: `1.${i}.0`, digest: digest(i), class: 'descriptive' }, now);
    expect(history).toHaveLength(HISTORY_LIMIT);
    expect(history[0]!.version).toBe(`1.${HISTORY_LIMIT + 3}.0`);
    expect(history.at(-1)!.version).toBe('1.4.0');
  });

  it('records one publish once', () => {
    const once = appendHistory(undefined, { version: '1.0.0', digest: digest(1) }, now);
    expect(appendHistory(once, { version: '1.0.0', digest: digest(1) }, now)).toHaveLength(1);
  });
});

describe('changeEvent', () => {
  it('a breaking change is a Warning naming its items; none for the first publish', () => {
    const live = text(twoSkills());
    const verdict = decideChange({ ...base, liveCard: live, nextCard: text(oneSkill('1.1.0')) });
    if (verdict.action !== 'publish') throw new Error('expected a publish');
    const event = changeEvent(verdict.change)!;
    expect(event).toMatchObject({ type: 'Warning', reason: 'CardChanged', action: 'Publish' });
    expect(event.message).toContain('published version 1.1.0');
    expect(event.message).toContain('breaking: skills[1]: skill alerts (Alerts) removed');
    expect(changeEvent({ version: '1.0.0', digest: digest0(), breaking: [] })).toBeUndefined();
  });

  it('bounds the items it lists', () => {
    const many = Array.from({ length: 8 }, (_, i) => ({ ...forecast, id: `s${i}`, name: 'x'.repeat(400) }));
    const verdict = decideChange({
      ...base,
      liveCard: text(sampleCard('1.0.0', { skills: many })),
      nextCard: text(oneSkill('1.1.0')),
    });
    if (verdict.action !== 'publish') throw new Error('expected a publish');
    const event = changeEvent(verdict.change)!;
    expect(event.message).toContain('(and 5 more)');
    expect(event.message.length).toBeLessThan(1024);
  });
});

const digest0 = () => `sha256:${'0'.repeat(64)}`;

// The plan: what a reconcile writes for each step, from status and the live ConfigMap only.
describe('planReconcile: card changes', () => {
  const now = new Date('2030-01-01T00:00:00Z');
  const key = async (): Promise<SecretView> => ({
    data: { jwk: Buffer.from(JSON.stringify(await generateSigningJwk('ES256', 'k1'))).toString('base64') },
    labelled: true,
  });
  const resource = (
    card: Record<string, unknown>,
    status: unknown,
    extra: { changes?: unknown; annotations?: Record<string, string> } = {},
  ): AgentCardObject => ({
    metadata: {
      name: 'weather',
      namespace: 'agents',
      uid: 'u1',
      generation: 1,
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec: {
      card,
      signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] },
      ...(extra.changes ? { changes: extra.changes } : {}),
    },
    status,
  });
  const input = (res: AgentCardObject, secret: SecretView, live?: PlanInput['liveConfigMap']): PlanInput => ({
    resource: res,
    secrets: new Map([['key', secret]]),
    liveConfigMap: live,
    interfaces: () => disabledVerdict(1, 'probes are off'),
    now,
  });

  it('records the first publish, then a breaking change in Audit mode; a restart adds nothing', async () => {
    const secret = await key();
    const first = await planReconcile(input(resource(twoSkills(), undefined), secret));
    expect(first.status.history).toEqual([
      { version: '1.0.0', digest: first.status.card!.digest, time: '2030-01-01T00:00:00Z' },
    ]);
    expect(first.events.map((e) => e.reason)).toEqual(['Published']);
    expect(first.change?.class).toBeUndefined();

    const second = await planReconcile(
      input(resource(oneSkill('1.1.0'), first.status), secret, first.configMap),
    );
    expect(second.configMap).toBeDefined();
    expect(second.status.history!.map((e) => [e.version, e.class])).toEqual([
      ['1.1.0', 'breaking'],
      ['1.0.0', undefined],
    ]);
    expect(second.status.history![0]!.digest).toBe(second.status.card!.digest);
    expect(second.change?.class).toBe('breaking');
    const changed = second.events.find((e) => e.reason === 'CardChanged');
    expect(changed?.type).toBe('Warning');
    expect(changed?.message).toContain('skill alerts (Alerts) removed');

    // The same inputs after a restart (the status and ConfigMap as written): no write, no entry.
    const again = await planReconcile(
      input(resource(oneSkill('1.1.0'), second.status), secret, second.configMap),
    );
    expect(again.configMap).toBeUndefined();
    expect(again.statusChanged).toBe(false);
    expect(again.change).toBeUndefined();
    expect(again.events).toEqual([]);
  });

  it('Enforce holds the change: nothing written, the last good card in status; the annotation publishes it', async () => {
    const secret = await key();
    const enforce = { changes: { breaking: 'Enforce' } };
    const first = await planReconcile(input(resource(twoSkills(), undefined, enforce), secret));

    const held = await planReconcile(
      input(resource(oneSkill('1.1.0'), first.status, enforce), secret, first.configMap),
    );
    expect(held.configMap).toBeUndefined();
    expect(held.status.card).toEqual(first.status.card);
    expect(held.status.history).toEqual(first.status.history);
    const published = held.status.conditions!.find((c) => c.type === 'Published')!;
    expect(published).toMatchObject({ status: 'False', reason: 'BreakingChangeHeld' });
    expect(published.message).toContain('skills[1]: skill alerts (Alerts) removed');
    expect(published.message).toContain('the last good card stays published');
    expect(held.ready).toBe('False');
    expect(held.events.map((e) => `${e.type} ${e.reason}`)).toContain('Warning BreakingChangeHeld');
    const digest = /accept-breaking-change=(sha256:[0-9a-f]{64})/.exec(published.message)![1]!;

    // Held again at the next reconcile (signed anew): the same status, so no write.
    const still = await planReconcile(
      input(resource(oneSkill('1.1.0'), held.status, enforce), secret, first.configMap),
    );
    expect(still.statusChanged).toBe(false);

    const accepted = await planReconcile(
      input(
        resource(oneSkill('1.1.0'), held.status, {
          ...enforce,
          annotations: { [ACCEPT_BREAKING_ANNOTATION]: digest },
        }),
        secret,
        first.configMap,
      ),
    );
    expect(accepted.configMap).toBeDefined();
    expect(accepted.status.history![0]).toMatchObject({ version: '1.1.0', class: 'breaking' });
    expect(accepted.status.conditions!.find((c) => c.type === 'Published')!.status).toBe('True');
    expect(accepted.events.find((e) => e.reason === 'CardChanged')?.message).toContain(
      `accepted by ${ACCEPT_BREAKING_ANNOTATION}`,
    );
  });
});
