/**
 * The change classification engine (pure, no I/O): every change between two A2A 1.0 Agent
 * Cards, each with its JSON path, the item it concerns and its class (rules.ts). The CLI's
 * `agentcard diff` prints it; anything else that holds two cards (the card published before and
 * the one about to be) can call `diffCards` the same way.
 *
 * Items are compared by identity, not by position: interfaces by binding, URL and protocol major
 * version (interfaces.ts), skills by id, security schemes by name (security.ts), extensions by
 * URI, media types by value. Signatures are not compared: they change with every signing, and
 * what they cover is the rest of the card, which is.
 */
import type { AgentCapabilities, AgentCard, AgentExtension, AgentSkill } from '../card/schema.ts';
import { atNew, atOld, Changes, missingFrom, quote, sameJson, type CardChange } from './change.ts';
import { compareInterfaces } from './interfaces.ts';
import { CLASS_RANK, CHANGE_CLASSES, type ChangeClass } from './rules.ts';
import { compareRequirements, compareSchemes } from './security.ts';

export type { CardChange } from './change.ts';

export interface CardDiff {
  /** Every change, the most severe class first, then in the order of the card. */
  changes: CardChange[];
  /** How many changes of each class. */
  counts: Record<ChangeClass, number>;
  /** The most severe class found, or undefined when the cards are equivalent. */
  highest?: ChangeClass;
}

export function diffCards(before: AgentCard, after: AgentCard): CardDiff {
  const changes = new Changes();
  compareText(before, after, changes);
  compareInterfaces(before.supportedInterfaces, after.supportedInterfaces, changes);
  compareCapabilities(before.capabilities, after.capabilities, changes);
  compareSchemes(before.securitySchemes, after.securitySchemes, changes);
  compareRequirements(
    before.securityRequirements,
    after.securityRequirements,
    { old: [], new: [] },
    '',
    changes,
  );
  compareModes(
    'input',
    before.defaultInputModes,
    after.defaultInputModes,
    ['defaultInputModes'],
    'the card',
    changes,
  );
  compareModes(
    'output',
    before.defaultOutputModes,
    after.defaultOutputModes,
    ['defaultOutputModes'],
    'the card',
    changes,
  );
  compareSkills(before, after, changes);

  const sorted = changes.list
    .map((change, order) => ({ change, order }))
    .sort((a, b) => CLASS_RANK[b.change.class] - CLASS_RANK[a.change.class] || a.order - b.order)
    .map((c) => c.change);
  const counts = Object.fromEntries(CHANGE_CLASSES.map((c) => [c, 0])) as Record<ChangeClass, number>;
  for (const c of sorted) counts[c.class]++;
  return { changes: sorted, counts, ...(sorted[0] ? { highest: sorted[0].class } : {}) };
}

/** Name, description, version, provider and links: words and pointers for people. */
function compareText(before: AgentCard, after: AgentCard, changes: Changes): void {
  for (const field of ['name', 'description'] as const) {
    if (before[field] !== after[field]) {
      const what =
        field === 'name' ? `name ${quote(before.name)} -> ${quote(after.name)}` : 'description changed';
      changes.add('card-text-changed', atNew(field), field, what, {
        before: before[field],
        after: after[field],
      });
    }
  }
  if (before.version !== after.version) {
    changes.add(
      'version-changed',
      atNew('version'),
      'version',
      `version ${before.version} -> ${after.version}`,
      {
        before: before.version,
        after: after.version,
      },
    );
  }
  if (!sameJson(before.provider, after.provider)) {
    const [o, n] = [before.provider?.organization, after.provider?.organization];
    changes.add(
      'provider-changed',
      after.provider ? atNew('provider') : atOld('provider'),
      'provider',
      o === n ? `provider ${o}: url changed` : `provider ${quote(o)} -> ${quote(n)}`,
    );
  }
  for (const field of ['documentationUrl', 'iconUrl'] as const) {
    if (before[field] === after[field]) continue;
    changes.add(
      'link-changed',
      after[field] === undefined ? atOld(field) : atNew(field),
      field,
      `${field} ${quote(before[field])} -> ${quote(after[field])}`,
      {
        ...(before[field] !== undefined ? { before: before[field] } : {}),
        ...(after[field] !== undefined ? { after: after[field] } : {}),
      },
    );
  }
}

/**
 * Section 3.3.4: a capability that is false or absent makes its operations fail
 * (UnsupportedOperationError, PushNotificationNotSupportedError), so turning one off breaks the
 * callers that use it.
 */
function compareCapabilities(before: AgentCapabilities, after: AgentCapabilities, changes: Changes): void {
  for (const flag of ['streaming', 'pushNotifications', 'extendedAgentCard'] as const) {
    const [was, is] = [before[flag] === true, after[flag] === true];
    if (was === is) continue;
    changes.add(
      is ? 'capability-added' : 'capability-removed',
      is || after[flag] !== undefined ? atNew('capabilities', flag) : atOld('capabilities', flag),
      flag,
      `capabilities.${flag} turned ${is ? 'on' : 'off'}`,
    );
  }
  compareExtensions(before.extensions ?? [], after.extensions ?? [], changes);
}

const uriOf = (e: AgentExtension) => e.uri ?? '';

/** Extensions by URI (section 4.6.3: a breaking change to an extension gets a new URI). */
function compareExtensions(before: AgentExtension[], after: AgentExtension[], changes: Changes): void {
  const olds = new Map(before.map((e, i) => [uriOf(e), { e, i }]));
  const news = new Map(after.map((e, i) => [uriOf(e), { e, i }]));
  for (const [uri, { e, i }] of olds) {
    if (news.has(uri)) continue;
    changes.add(
      'extension-removed',
      atOld('capabilities', 'extensions', i),
      uri,
      `extension ${uri} removed${e.required ? ' (it was required)' : ''}`,
    );
  }
  for (const [uri, { e: n, i }] of news) {
    const at = (...rest: (string | number)[]) => atNew('capabilities', 'extensions', i, ...rest);
    const old = olds.get(uri)?.e;
    if (!old) {
      // Section 3.3.4: a client that does not declare a required extension gets
      // ExtensionSupportRequiredError; an optional one it may ignore.
      changes.add(
        n.required ? 'extension-required' : 'extension-added',
        at(),
        uri,
        `extension ${uri} added${n.required ? ' as required: clients that do not support it are refused' : ''}`,
      );
      continue;
    }
    if ((old.required === true) !== (n.required === true)) {
      changes.add(
        n.required ? 'extension-required' : 'extension-optional',
        at('required'),
        uri,
        `extension ${uri} ${n.required ? 'now required: clients that do not support it are refused' : 'no longer required'}`,
      );
    }
    if (!sameJson(old.params ?? {}, n.params ?? {})) {
      changes.add('extension-params-changed', at('params'), uri, `extension ${uri}: params changed`);
    }
    if ((old.description ?? '') !== (n.description ?? '')) {
      changes.add('extension-text-changed', at('description'), uri, `extension ${uri}: description changed`);
    }
  }
}

/** Media types (a set: order and repeats carry no meaning). */
function compareModes(
  kind: 'input' | 'output',
  before: readonly string[],
  after: readonly string[],
  at: { old: (string | number)[]; new: (string | number)[] } | (string | number)[],
  whose: string,
  changes: Changes,
): void {
  const where = Array.isArray(at) ? { old: at, new: at } : at;
  for (const mode of missingFrom(before, after)) {
    changes.add(
      kind === 'input' ? 'input-mode-removed' : 'output-mode-removed',
      atOld(...where.old),
      mode,
      `${whose}${kind} mode ${mode} removed`,
    );
  }
  for (const mode of missingFrom(after, before)) {
    changes.add(
      kind === 'input' ? 'input-mode-added' : 'output-mode-added',
      atNew(...where.new),
      mode,
      `${whose}${kind} mode ${mode} added`,
    );
  }
}

function compareSkills(before: AgentCard, after: AgentCard, changes: Changes): void {
  const olds = new Map(before.skills.map((s, i) => [s.id, { s, i }]));
  const news = new Map(after.skills.map((s, i) => [s.id, { s, i }]));
  for (const [id, { s, i }] of olds) {
    if (!news.has(id))
      changes.add('skill-removed', atOld('skills', i), id, `skill ${id} (${s.name}) removed`);
  }
  for (const [id, { s: n, i }] of news) {
    const found = olds.get(id);
    if (!found) {
      changes.add('skill-added', atNew('skills', i), id, `skill ${id} (${n.name}) added`);
      continue;
    }
    const { s: o, i: oi } = found;
    const whose = `skill ${id}: `;
    for (const field of ['name', 'description'] as const) {
      if (o[field] !== n[field]) {
        changes.add('skill-text-changed', atNew('skills', i, field), id, `${whose}${field} changed`);
      }
    }
    if (!sameJson(o.examples ?? [], n.examples ?? [])) {
      changes.add('skill-text-changed', atNew('skills', i, 'examples'), id, `${whose}examples changed`);
    }
    const removedTags = missingFrom(o.tags, n.tags);
    const addedTags = missingFrom(n.tags, o.tags);
    if (removedTags.length || addedTags.length) {
      const parts = [
        ...(addedTags.length ? [`added ${addedTags.join(', ')}`] : []),
        ...(removedTags.length ? [`removed ${removedTags.join(', ')}`] : []),
      ];
      changes.add('skill-tags-changed', atNew('skills', i, 'tags'), id, `${whose}tags ${parts.join('; ')}`);
    }
    skillModes(before, after, o, n, oi, i, changes);
    compareRequirements(
      o.securityRequirements,
      n.securityRequirements,
      { old: ['skills', oi], new: ['skills', i] },
      whose,
      changes,
    );
  }
}

/**
 * A skill's media types are its own list, or the card's defaults when it has none (section
 * 4.4.5). A change of the defaults alone is reported once, at the defaults; a skill is compared
 * when either card gives it a list of its own.
 */
function skillModes(
  before: AgentCard,
  after: AgentCard,
  o: AgentSkill,
  n: AgentSkill,
  oi: number,
  i: number,
  changes: Changes,
): void {
  const own = (list: string[] | undefined) => (list?.length ? list : undefined);
  for (const kind of ['input', 'output'] as const) {
    const field = kind === 'input' ? 'inputModes' : 'outputModes';
    const defaults = kind === 'input' ? 'defaultInputModes' : 'defaultOutputModes';
    const [was, is] = [own(o[field]), own(n[field])];
    if (!was && !is) continue;
    compareModes(
      kind,
      was ?? before[defaults],
      is ?? after[defaults],
      { old: was ? ['skills', oi, field] : [defaults], new: is ? ['skills', i, field] : [defaults] },
      `skill ${n.id}: `,
      changes,
    );
  }
}
