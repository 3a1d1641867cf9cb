/**
 * The rules that classify a change between two A2A 1.0 Agent Cards, in one table: each rule's
 * class and what it covers. docs/changes.md lists the same table for people, and a test checks
 * that the two agree, so the documentation cannot drift from the engine.
 *
 * The three classes, from a caller's side:
 * - breaking: a client that worked with the old card can fail with the new one (something it
 *   may use is gone or moved, or it must now present more credentials);
 * - compatible: every client of the old card still works; something was added or loosened;
 * - descriptive: text only; nothing a client sends or receives changes.
 *
 * Where a rule follows from the A2A specification, `spec` names the section of A2A 1.0
 * (https://a2a-protocol.org/v1.0.0/specification/). Where the specification is silent, the rule
 * is this project's choice, and docs/changes.md says why.
 */

export const CHANGE_CLASSES = ['breaking', 'compatible', 'descriptive'] as const;
export type ChangeClass = (typeof CHANGE_CLASSES)[number];

/** The rank of a class: the higher, the more severe (for --fail-on and the summary). */
export const CLASS_RANK: Record<ChangeClass, number> = { descriptive: 1, compatible: 2, breaking: 3 };

export interface Rule {
  class: ChangeClass;
  /** What the rule covers, in a few words (the table's "change" column). */
  change: string;
  /** Sections of the A2A 1.0 specification the rule rests on; empty when the choice is ours. */
  spec: readonly string[];
}

export const RULES = {
  // Interfaces: an interface is identified by its binding, URL and protocol major version.
  'interface-removed': {
    class: 'breaking',
    change: 'an interface removed (its binding still offered at another URL)',
    spec: ['4.4.6', '8.3.1'],
  },
  'binding-removed': {
    class: 'breaking',
    change: 'a protocol binding removed: no interface speaks it any more',
    spec: ['5.2', '8.3.2'],
  },
  'interface-url-changed': {
    class: 'breaking',
    change: "an interface's URL changed (same binding and protocol major version)",
    spec: ['8.3.2'],
  },
  'protocol-major-changed': {
    class: 'breaking',
    change: "an interface's protocol major version changed (same binding and URL)",
    spec: ['3.6', '3.6.2'],
  },
  'protocol-minor-lowered': {
    class: 'breaking',
    change: "an interface's protocol minor version lowered",
    spec: ['3.6.2'],
  },
  'protocol-minor-raised': {
    class: 'compatible',
    change: "an interface's protocol minor version raised",
    spec: ['3.6', '4.4.6'],
  },
  'interface-tenant-changed': {
    class: 'breaking',
    change: "an interface's tenant set, changed or removed",
    spec: ['4.4.6'],
  },
  'interface-added': {
    class: 'compatible',
    change: 'an interface added for a binding already offered',
    spec: ['5.2'],
  },
  'binding-added': {
    class: 'compatible',
    change: 'an interface of a new protocol binding added',
    spec: ['5.2'],
  },
  'preferred-interface-changed': {
    class: 'compatible',
    change: 'another interface is first (preferred); the old one is still listed',
    spec: ['8.3.1', '8.3.2'],
  },

  // Skills, identified by id.
  'skill-removed': { class: 'breaking', change: 'a skill removed (by id)', spec: ['4.4.5'] },
  'skill-added': { class: 'compatible', change: 'a skill added (by id)', spec: ['4.4.5'] },
  'skill-text-changed': {
    class: 'descriptive',
    change: "a skill's name, description or examples changed",
    spec: ['4.4.5'],
  },
  'skill-tags-changed': { class: 'descriptive', change: "a skill's tags added or removed", spec: [] },

  // Media types: the card's defaults, and each skill's own list where it overrides them.
  'input-mode-removed': {
    class: 'breaking',
    change: 'an input mode removed (card default, or a skill accepts it no more)',
    spec: ['4.4.1', '4.4.5'],
  },
  'input-mode-added': { class: 'compatible', change: 'an input mode added', spec: ['4.4.1', '4.4.5'] },
  'output-mode-removed': {
    class: 'breaking',
    change: 'an output mode removed (card default, or a skill produces it no more)',
    spec: ['4.4.1', '4.4.5'],
  },
  'output-mode-added': { class: 'compatible', change: 'an output mode added', spec: ['4.4.1', '4.4.5'] },

  // Security requirements: a list of alternatives, each naming schemes (and their scopes) that
  // are all needed together.
  'security-required': {
    class: 'breaking',
    change: 'a security requirement added where none was (card or skill)',
    spec: ['4.4.1', '7.4'],
  },
  'security-tightened': {
    class: 'breaking',
    change: 'a way a caller could authenticate now needs another scheme or scope',
    spec: ['4.4.1', '4.4.5', '7.4'],
  },
  'security-relaxed': {
    class: 'compatible',
    change: 'a security requirement removed or loosened, or another way to authenticate added',
    spec: ['4.4.1', '7.4'],
  },

  // Security schemes, identified by name.
  'security-scheme-removed': {
    class: 'breaking',
    change: 'a security scheme removed (by name)',
    spec: ['4.5.1'],
  },
  'security-scheme-added': {
    class: 'compatible',
    change: 'a security scheme added (by name)',
    spec: ['4.5.1'],
  },
  'security-scheme-changed': {
    class: 'breaking',
    change:
      "a security scheme's kind or settings changed: location, parameter name, HTTP scheme, bearer format, OAuth flow, a URL, PKCE required",
    spec: ['4.5', '7.3'],
  },
  'security-scheme-relaxed': {
    class: 'compatible',
    change: "an OAuth flow's PKCE requirement lifted",
    spec: ['4.5.8'],
  },
  'oauth-scope-removed': {
    class: 'breaking',
    change: "a scope removed from an OAuth flow's scopes",
    spec: ['4.5.7'],
  },
  'oauth-scope-added': {
    class: 'compatible',
    change: "a scope added to an OAuth flow's scopes",
    spec: ['4.5.7'],
  },
  'security-scheme-text-changed': {
    class: 'descriptive',
    change: "a security scheme's description, or a scope's description, changed",
    spec: ['4.5'],
  },

  // Capabilities.
  'capability-removed': {
    class: 'breaking',
    change: 'streaming, pushNotifications or extendedAgentCard turned off (false or absent)',
    spec: ['3.3.4', '4.4.3'],
  },
  'capability-added': {
    class: 'compatible',
    change: 'streaming, pushNotifications or extendedAgentCard turned on',
    spec: ['3.3.4', '4.4.3'],
  },
  'extension-removed': {
    class: 'breaking',
    change: 'an extension removed (by URI)',
    spec: ['4.4.4', '4.6.1'],
  },
  'extension-added': {
    class: 'compatible',
    change: 'an extension added that is not required',
    spec: ['4.4.4', '4.6.1'],
  },
  'extension-required': {
    class: 'breaking',
    change: 'an extension added as required, or an extension made required',
    spec: ['3.3.4', '4.6.3'],
  },
  'extension-optional': {
    class: 'compatible',
    change: 'a required extension made optional',
    spec: ['3.3.4', '4.6.3'],
  },
  'extension-params-changed': { class: 'breaking', change: "an extension's params changed", spec: ['4.4.4'] },
  'extension-text-changed': {
    class: 'descriptive',
    change: "an extension's description changed",
    spec: ['4.4.4'],
  },

  // The card's own text.
  'card-text-changed': {
    class: 'descriptive',
    change: "the card's name or description changed",
    spec: ['4.4.1'],
  },
  'version-changed': { class: 'descriptive', change: "the card's version changed", spec: ['4.4.1'] },
  'provider-changed': {
    class: 'descriptive',
    change: 'the provider (organization or URL) set, changed or removed',
    spec: ['4.4.2'],
  },
  'link-changed': {
    class: 'descriptive',
    change: 'documentationUrl or iconUrl set, changed or removed',
    spec: ['4.4.1'],
  },
} as const satisfies Record<string, Rule>;

export type RuleId = keyof typeof RULES;

export const ruleIds = (): RuleId[] => Object.keys(RULES) as RuleId[];
