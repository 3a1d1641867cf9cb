/**
 * The AgentPolicy (namespaced) and ClusterAgentPolicy (cluster-scoped) resources
 * (agentcard.dev/v1alpha1): what the AgentCards they select must be, and who may call them. The
 * catalogs' Issuer/ClusterIssuer pattern: the namespaced kind governs the AgentCards of its own
 * namespace and has no namespaceSelector (the schema is strict, so one that tries to reach across
 * namespaces is refused, not quietly widened); the cluster kind selects namespaces.
 *
 * A policy is one mode and a list of rules. Each rule has a name, a message and exactly one kind:
 * trust, content, reachability or callers. The schema checks every pattern and selector, so an
 * invalid policy is refused as a whole with the field named (never half-applied). Types come from
 * these schemas; the CRDs come from them through crd.ts.
 */
import { z } from 'zod';
import { API_VERSION, CLUSTER_POLICY_KIND, POLICY_KIND } from '../api/names.ts';
import { LabelSelectorSchema } from '../catalog/resource.ts';
import { ConditionSchema } from '../card/resource.ts';
import { agentCardShape } from '../card/schema.ts';
import { parseIdentityPattern } from '../card/x5c.ts';

/** The three modes, in the words of ValidatingAdmissionPolicy's validationActions, weakest first. */
export const MODES = ['Audit', 'Warn', 'Enforce'] as const;
export type Mode = (typeof MODES)[number];

export const POLICY_LIMITS = {
  rules: 64,
  listItems: 64,
  messageLength: 1024,
  /** The largest card a maxCardBytes may allow: what the CLI reads at most is far above it. */
  maxCardBytes: 1024 * 1024,
} as const;

/** The variable an identity pattern may hold: the namespace of the AgentCard being judged. */
export const NAMESPACE_VARIABLE = '{namespace}';
/** A valid namespace name used to check a pattern with {namespace} in it. */
const SAMPLE_NAMESPACE = 'sample-namespace';

/**
 * Checks an identity pattern with {namespace} allowed anywhere a path segment's characters are
 * (x5c.ts parseIdentityPattern after the expansion): a namespace is a DNS label, so the expansion
 * can never add a "/" or "..". Any other {variable} is an error.
 */
export function checkIdentityPattern(pattern: string): void {
  const other = /\{(?!namespace\})[^}]*\}/.exec(pattern);
  if (other) throw new Error(`unknown variable ${other[0]} (only ${NAMESPACE_VARIABLE} is known)`);
  parseIdentityPattern(pattern.split(NAMESPACE_VARIABLE).join(SAMPLE_NAMESPACE));
}

/** An identity pattern with {namespace} in it, for one namespace. */
export const expandIdentityPattern = (pattern: string, namespace: string): string =>
  pattern.split(NAMESPACE_VARIABLE).join(namespace);

const IdentityPatternSchema = z
  .string()
  .min(1)
  .max(2048)
  .superRefine((pattern, ctx) => {
    try {
      checkIdentityPattern(pattern);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  })
  .describe(
    'A signer identity pattern: a URI (a SPIFFE ID), exact or ending in /* for every identity below that path; {namespace} stands for the namespace of the AgentCard, e.g. "spiffe://example.org/ns/{namespace}/*".',
  );

const unique = <T extends z.ZodType<string>>(item: T, what: string) =>
  z
    .array(item)
    .min(1)
    .max(POLICY_LIMITS.listItems)
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((v, i) => {
        if (seen.has(v)) ctx.addIssue({ code: 'custom', path: [i], message: `duplicate ${what} "${v}"` });
        seen.add(v);
      });
    });

// ---------------------------------------------------------------------------------------------
// trust

export const TrustRuleSchema = z
  .strictObject({
    signed: z
      .literal(true)
      .describe('The published card must carry at least one signature (spec.signing set and signed).')
      .optional(),
    signerIdentities: unique(IdentityPatternSchema, 'identity pattern')
      .describe(
        "The published card must carry a signature whose certificate's identity (its URI SAN) matches one of these patterns. Only an identity the certificate proves counts: its chain (x5c) must verify to the ca.crt of its Secret (status.signatures[].certificate.verifiedIdentity).",
      )
      .optional(),
    sourceSignature: z
      .literal('Verified')
      .describe(
        "An adopted card (spec.source) must carry its own signature, verified under spec.source.verification's keys (status.source.signature.result Verified). Written cards are not concerned.",
      )
      .optional(),
  })
  .superRefine((t, ctx) => {
    if (t.signed === undefined && t.signerIdentities === undefined && t.sourceSignature === undefined)
      ctx.addIssue({
        code: 'custom',
        message: 'set at least one of signed, signerIdentities, sourceSignature',
      });
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: 'has(self.signed) || has(self.signerIdentities) || has(self.sourceSignature)',
        message: 'set at least one of signed, signerIdentities, sourceSignature',
      },
    ],
  })
  .describe('Who must have signed the card.');

// ---------------------------------------------------------------------------------------------
// content

/** The fields of the card schema, as a tree: which dotted paths a requiredFields entry may name. */
type FieldKind = 'text' | 'list' | 'map' | 'object' | 'boolean' | 'number';
interface FieldNode {
  kind: FieldKind;
  fields?: Record<string, FieldNode>;
}

function fieldNode(schema: z.ZodType): FieldNode {
  let s: z.ZodType = schema;
  // Unwrap optional, default and the like to the type itself.
  for (;;) {
    const def = (s as unknown as { def: { type: string; innerType?: z.ZodType } }).def;
    if (def.innerType && ['optional', 'default', 'nullable', 'prefault', 'readonly'].includes(def.type))
      s = def.innerType;
    else break;
  }
  const def = (s as unknown as { def: { type: string; shape?: Record<string, z.ZodType> } }).def;
  switch (def.type) {
    case 'string':
      return { kind: 'text' };
    case 'array':
      return { kind: 'list' };
    case 'record':
      return { kind: 'map' };
    case 'boolean':
      return { kind: 'boolean' };
    case 'number':
    case 'int':
      return { kind: 'number' };
    case 'object': {
      const shape = (s as unknown as { shape: Record<string, z.ZodType> }).shape;
      return {
        kind: 'object',
        fields: Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, fieldNode(v)])),
      };
    }
    default:
      return { kind: 'object' };
  }
}

let cardFields: FieldNode | undefined;
/** The A2A 1.0 card's field tree (schema.ts agentCardShape), built once. */
function cardFieldTree(): FieldNode {
  cardFields ??= {
    kind: 'object',
    fields: Object.fromEntries(Object.entries(agentCardShape).map(([k, v]) => [k, fieldNode(v)])),
  };
  return cardFields;
}

/**
 * The kind of a dotted card field path ("provider.organization", "documentationUrl"), or an error
 * naming what is wrong with it. Lists and maps end a path: "skills" can be required, not
 * "skills.id".
 */
export function cardFieldKind(path: string): FieldKind {
  const segments = path.split('.');
  let node = cardFieldTree();
  let at = '';
  for (const segment of segments) {
    const next = node.fields?.[segment];
    if (!next) {
      const known = Object.keys(node.fields ?? {});
      throw new Error(
        node.kind === 'object'
          ? `"${segment}" is not a field of ${at || 'the A2A 1.0 card'} (fields: ${known.join(', ')})`
          : `${at} is a ${node.kind}; a required field path ends there`,
      );
    }
    at = at ? `${at}.${segment}` : segment;
    node = next;
  }
  return node.kind;
}

const FieldPathSchema = z
  .string()
  .min(1)
  .max(256)
  .superRefine((path, ctx) => {
    try {
      cardFieldKind(path);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  })
  .describe(
    'A field of the A2A 1.0 card as a dotted path, e.g. "provider.organization" or "securitySchemes".',
  );

export const CAPABILITIES = ['streaming', 'pushNotifications', 'extendedAgentCard'] as const;

/** A URI scheme (RFC 3986 section 3.1), lower case: schemes compare case-insensitively. */
const SCHEME = /^[a-z][a-z0-9+.-]{0,31}$/;
/** A DNS name without a leading dot; matched as itself or as the parent of the host. */
const HOST_SUFFIX = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

const contentRuleShape = {
  requiredFields: unique(FieldPathSchema, 'field')
    .describe(
      'Fields the card must have, non-empty, as dotted paths of the A2A 1.0 card ("provider.organization", "securitySchemes", "documentationUrl").',
    )
    .optional(),
  requiredCapabilities: unique(z.enum(CAPABILITIES), 'capability')
    .describe('Capabilities that must be true: streaming, pushNotifications, extendedAgentCard.')
    .optional(),
  requiredExtensions: unique(z.string().min(1).max(2048), 'extension')
    .describe('Extension URIs the card must declare in capabilities.extensions.')
    .optional(),
  allowedSchemes: unique(
    z.string().regex(SCHEME, 'must be a lower-case URI scheme such as "https"'),
    'scheme',
  )
    .describe('The URI schemes every interface URL may use, e.g. ["https"].')
    .optional(),
  allowedHostSuffixes: unique(
    z
      .string()
      .max(253)
      .regex(HOST_SUFFIX, 'must be a lower-case DNS name without a leading dot, e.g. "example.com"'),
    'host suffix',
  )
    .describe(
      'The hosts every interface URL may name: a host matches a suffix when it is the suffix or ends in "." and the suffix ("example.com" allows "a.example.com" and "example.com", not "badexample.com").',
    )
    .optional(),
  allowedBindings: unique(z.string().min(1).max(64), 'binding')
    .describe('The protocol bindings every interface may declare, e.g. ["JSONRPC", "GRPC", "HTTP+JSON"].')
    .optional(),
  maxCardBytes: z
    .int()
    .min(256)
    .max(POLICY_LIMITS.maxCardBytes)
    .describe('The largest card, in bytes of its served JSON (Google Agent Registry takes 10240).')
    .optional(),
  forbiddenInstructions: z
    .strictObject({
      minLength: z
        .int()
        .min(1)
        .max(100_000)
        .describe('The length, in characters, above which an instructions-like text block counts.'),
    })
    .describe(
      'Refuse instructions-like text (a pasted system prompt: "You are ...", "never reveal ...", a <system> tag) longer than minLength in the description, a skill\'s description or examples, or an extension\'s description.',
    )
    .optional(),
};

export const ContentRuleSchema = z
  .strictObject(contentRuleShape)
  .superRefine((c, ctx) => {
    if (Object.values(c).every((v) => v === undefined))
      ctx.addIssue({ code: 'custom', message: 'set at least one content requirement' });
  })
  .meta({
    'x-kubernetes-validations': [
      {
        // A structural object has no size() in CEL: one has() per field.
        rule: Object.keys(contentRuleShape)
          .map((k) => `has(self.${k})`)
          .join(' || '),
        message: 'set at least one content requirement',
      },
    ],
  })
  .describe('What the card must and must not contain.');

// ---------------------------------------------------------------------------------------------
// reachability, callers

export const ReachabilityRuleSchema = z
  .strictObject({
    readyBeforeListed: z
      .literal(true)
      .describe(
        'The AgentCard must be Ready (every interface proven by a probe) before any catalog lists it.',
      ),
  })
  .describe('What the agent must prove before it is listed.');

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const CallerCardSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(253)
      .regex(DNS_SUBDOMAIN, 'must be an AgentCard name (a lower-case DNS subdomain)')
      .describe("Name of the calling agent's AgentCard."),
    namespace: z
      .string()
      .min(1)
      .max(63)
      .regex(DNS_LABEL, 'must be a namespace name (a lower-case DNS label)')
      .describe("Its namespace (default: the called AgentCard's namespace).")
      .optional(),
  })
  .describe('An agent allowed to call, by its AgentCard.');

export const CallersRuleSchema = z
  .strictObject({
    agentCards: z
      .array(CallerCardSchema)
      .min(1)
      .max(POLICY_LIMITS.listItems)
      .describe('Agents allowed to call, by AgentCard.')
      .optional(),
    namespaceSelector: LabelSelectorSchema.describe(
      'Namespaces whose agents may call ({} allows every namespace).',
    ).optional(),
    signerIdentities: unique(IdentityPatternSchema, 'identity pattern')
      .describe(
        "Agents allowed to call, by their card's signer identity pattern ({namespace}: the called agent's).",
      )
      .optional(),
  })
  .superRefine((c, ctx) => {
    if (c.agentCards === undefined && c.namespaceSelector === undefined && c.signerIdentities === undefined)
      ctx.addIssue({
        code: 'custom',
        message: 'set at least one of agentCards, namespaceSelector, signerIdentities',
      });
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: 'has(self.agentCards) || has(self.namespaceSelector) || has(self.signerIdentities)',
        message: 'set at least one of agentCards, namespaceSelector, signerIdentities',
      },
    ],
  })
  .describe(
    "Who may call the agent's A2A interfaces; everyone else is refused on the network. The card itself stays public.",
  );

// ---------------------------------------------------------------------------------------------
// rules and spec

export const RULE_KINDS = ['trust', 'content', 'reachability', 'callers'] as const;
export type RuleKind = (typeof RULE_KINDS)[number];

export const RuleSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(63)
      .regex(DNS_LABEL, 'must be a DNS label (lower-case letters, digits, "-")')
      .describe('Name of the rule, unique within the policy; reports and metrics name it.'),
    message: z
      .string()
      .min(1)
      .max(POLICY_LIMITS.messageLength)
      // One line: kubectl, Events and the CLI print it as it is.
      .regex(/^[^\p{Cc}]*$/u, 'must be one line of text without control characters')
      .describe('What a failing card is told (kubectl apply shows it in Warn and Enforce mode).'),
    trust: TrustRuleSchema.optional(),
    content: ContentRuleSchema.optional(),
    reachability: ReachabilityRuleSchema.optional(),
    callers: CallersRuleSchema.optional(),
  })
  .superRefine((r, ctx) => {
    const set = RULE_KINDS.filter((k) => r[k] !== undefined);
    if (set.length !== 1)
      ctx.addIssue({
        code: 'custom',
        message: `set exactly one of ${RULE_KINDS.join(', ')}${set.length ? ` (found ${set.join(', ')})` : ''}`,
      });
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: RULE_KINDS.map((k) => `(has(self.${k}) ? 1 : 0)`).join(' + ') + ' == 1',
        message: `set exactly one of ${RULE_KINDS.join(', ')}`,
      },
    ],
  })
  .describe('One rule: a name, a message and exactly one of trust, content, reachability, callers.');

const RulesSchema = z
  .array(RuleSchema)
  .min(1)
  .max(POLICY_LIMITS.rules)
  .superRefine((rules, ctx) => {
    const seen = new Set<string>();
    rules.forEach((r, i) => {
      if (seen.has(r.name))
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate rule name "${r.name}"` });
      seen.add(r.name);
    });
  })
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })
  .describe('The rules; a card complies when every rule passes.');

const policySpecShape = {
  mode: z
    .enum(MODES)
    .default('Audit')
    .describe(
      'What a failing rule does: "Audit" (default), reported only; "Warn", also an admission warning; "Enforce", refused at admission and never published or listed. Where several policies select a card, the strictest mode of a failing rule wins.',
    ),
  selector: LabelSelectorSchema.describe(
    'Labels of the AgentCards the policy governs; absent or empty selects every AgentCard in scope.',
  ).optional(),
  rules: RulesSchema,
  quarantine: z
    .boolean()
    .describe(
      "Enforce mode only, with the operator's --network-policies: an AgentCard that fails a trust rule of this policy is quarantined, its agent's Pods admitting nothing on the network but the card's serving port and the operator (a NetworkPolicy). Default false; ignored in Audit and Warn mode.",
    )
    .optional(),
};

export const AgentPolicySpecSchema = z
  .strictObject(policySpecShape)
  .describe('What the AgentCards of this namespace that the policy selects must be.');

export const ClusterAgentPolicySpecSchema = z
  .strictObject({
    ...policySpecShape,
    namespaceSelector: LabelSelectorSchema.describe(
      'Labels of the namespaces whose AgentCards the policy governs; absent or empty selects every namespace.',
    ).optional(),
  })
  .describe('What the AgentCards of the namespaces the policy selects must be.');

// ---------------------------------------------------------------------------------------------
// status (written by the policy controller, operator/controllers/policy/)

export const POLICY_CONDITION_TYPES = ['Accepted', 'Ready'] as const;

export const PolicyStatusSchema = z
  .strictObject({
    observedGeneration: z.int().min(0).describe('The .metadata.generation last reconciled.').optional(),
    conditions: z
      .array(ConditionSchema)
      .max(16)
      .describe(`Conditions: ${POLICY_CONDITION_TYPES.join(', ')}.`)
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
      .optional(),
    matched: z.int().min(0).describe('AgentCards the policy selects.').optional(),
    compliant: z.int().min(0).describe('Of those, AgentCards that pass every rule.').optional(),
    failing: z.int().min(0).describe('Of those, AgentCards that fail at least one rule.').optional(),
    notEvaluated: z
      .int()
      .min(0)
      .describe(
        'Of those, AgentCards that fail no rule but that a rule could not judge yet (a fact their status does not hold yet, such as the signer or Ready).',
      )
      .optional(),
  })
  .describe('The observed state of the policy.');

const metadata = z.looseObject({
  name: z.string().min(1).max(253).regex(DNS_SUBDOMAIN, 'must be a lower-case DNS subdomain'),
  namespace: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
});

export const AgentPolicyResourceSchema = z.strictObject({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(POLICY_KIND),
  metadata,
  spec: AgentPolicySpecSchema,
  status: PolicyStatusSchema.optional(),
});

export const ClusterAgentPolicyResourceSchema = z.strictObject({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(CLUSTER_POLICY_KIND),
  metadata,
  spec: ClusterAgentPolicySpecSchema,
  status: PolicyStatusSchema.optional(),
});

export type TrustRule = z.infer<typeof TrustRuleSchema>;
export type ContentRule = z.infer<typeof ContentRuleSchema>;
export type ReachabilityRule = z.infer<typeof ReachabilityRuleSchema>;
export type CallersRule = z.infer<typeof CallersRuleSchema>;
export type Rule = z.infer<typeof RuleSchema>;
export type AgentPolicySpec = z.infer<typeof AgentPolicySpecSchema>;
export type ClusterAgentPolicySpec = z.infer<typeof ClusterAgentPolicySpecSchema>;
/** Either kind's spec: the cluster kind's, with namespaceSelector absent for the namespaced kind. */
export type PolicySpec = ClusterAgentPolicySpec;
export type PolicyStatus = z.infer<typeof PolicyStatusSchema>;

/** A parsed policy of either kind: what the engine, the CEL generator and the CLI take. */
export interface Policy {
  kind: typeof POLICY_KIND | typeof CLUSTER_POLICY_KIND;
  name: string;
  /** The namespace of an AgentPolicy; absent for a ClusterAgentPolicy. */
  namespace?: string;
  spec: PolicySpec;
}

/** "AgentPolicy team-a/https-only" or "ClusterAgentPolicy https-only": how reports name a policy. */
export const policyRef = (p: Pick<Policy, 'kind' | 'name' | 'namespace'>): string =>
  `${p.kind} ${p.namespace ? `${p.namespace}/` : ''}${p.name}`;

/** The kind of a rule (the one of trust, content, reachability, callers it sets). */
export const ruleKind = (rule: Rule): RuleKind => RULE_KINDS.find((k) => rule[k] !== undefined)!;
