/**
 * `agentcard policy check -f FILE|DIR [-f ...] --policy FILE|DIR [--policy ...]`: judges AgentCard
 * manifests and bare cards against AgentPolicy and ClusterAgentPolicy files offline, with the
 * engine the operator uses (operator/policy/). Exit 0 when no Enforce rule fails, 1 when one does
 * (or a card is invalid or unreadable), 2 for a usage error or an invalid policy: a policy is
 * checked as a whole before any card is judged, so a broken policy never half-applies.
 *
 * Offline, some facts are not known (who signed the published card, the agent's own card of an
 * adopted AgentCard, whether it is Ready): the rules that need them are reported as not evaluated,
 * never as passed.
 */
import { UserError } from '../../errors.ts';
import { expandInputs } from '../files.ts';
import { MAX_INPUT_BYTES, parseDocuments, parseFlags, readInput, type InputDocument } from '../input.ts';
import { formatProblem, hasErrors, type Problem } from '../../card/problem.ts';
import { hasSource, validateCard, validateResource } from '../../card/validate.ts';
import {
  evaluatePolicies,
  mergeResults,
  type Merged,
  type PolicyResult,
  type Subject,
} from '../../policy/evaluate.ts';
import { isPolicyObject, parsePolicy } from '../../policy/parse.ts';
import { policyRef, type Mode, type Policy } from '../../policy/resource.ts';
import { bareCardViews, offlineFacts, specCardViews } from '../../policy/subject.ts';

const USAGE = `usage: agentcard policy check -f FILE|DIR|- [-f ...] --policy FILE|DIR [--policy ...]
                              [--namespace NS] [--namespace-label KEY=VALUE ...]
                              [--output text|json]

Judges AgentCard manifests and bare A2A cards against AgentPolicy and ClusterAgentPolicy
files, offline, with the operator's policy engine. A directory means every *.yaml, *.yml and
*.json file below it. Each failing rule is printed with its policy's mode, the policy, the
rule, the JSON path and the rule's message. Rules that need the cluster (the signer's
identity, an adopted card's source, Ready, callers) are reported as not evaluated.

  --namespace NS              namespace of manifests without one, and of bare cards
                              (default "default")
  --namespace-label KEY=VALUE a label of that namespace, for namespaceSelector (repeatable)

Exit 0: no Enforce rule fails; 1: an Enforce rule fails, or a card is invalid or unreadable;
2: a usage error or an invalid policy (nothing is judged).
`;

type Report = {
  source: string;
  kind: 'AgentCard' | 'card' | 'file';
  name?: string;
  namespace?: string;
  /** The strictest mode among the failing rules; absent when none fails. */
  action?: Mode;
  /** `invalid`: the card itself is invalid (its problems say why) and was not judged. */
  status: 'compliant' | 'failing' | 'invalid' | 'unselected';
  problems?: Problem[];
  policies: PolicyResult[];
  failures: Merged['failures'];
  notEvaluated: Merged['notEvaluated'];
};

/** Reads every policy of the --policy inputs; any problem stops the run (exit 2). */
async function readPolicies(args: string[], defaultNamespace: string): Promise<Policy[]> {
  const policies: Policy[] = [];
  const errors: string[] = [];
  const seen = new Map<string, string>();
  for (const input of await expandInputs(args)) {
    const source = input.path === '-' ? 'standard input' : input.path;
    if (input.type === 'error') {
      errors.push(input.error.message);
      continue;
    }
    let docs: InputDocument[];
    try {
      docs = parseDocuments(await readInput(input.path, MAX_INPUT_BYTES), source);
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      errors.push(err.message);
      continue;
    }
    let found = 0;
    for (const doc of docs) {
      if (doc.type !== 'other' || !isPolicyObject(doc.resource)) continue;
      found++;
      const parsed = parsePolicy(doc.resource, defaultNamespace);
      if (!parsed.ok) {
        for (const p of parsed.problems) errors.push(`${doc.label}: ${formatProblem(p)}`);
        continue;
      }
      const ref = policyRef(parsed.policy);
      const first = seen.get(ref);
      if (first) errors.push(`${doc.label}: ${ref} is also defined in ${first}`);
      seen.set(ref, doc.label);
      policies.push(parsed.policy);
    }
    if (found === 0 && !input.fromDirectory)
      errors.push(`${source}: no AgentPolicy or ClusterAgentPolicy found`);
  }
  if (errors.length > 0) {
    for (const e of errors) process.stderr.write(`agentcard: ${e}\n`);
    throw new UserError(
      `invalid policy input (${errors.length} problem${errors.length === 1 ? '' : 's'}); no card was judged`,
      2,
    );
  }
  if (policies.length === 0)
    throw new UserError('no AgentPolicy or ClusterAgentPolicy in the --policy input', 2);
  return policies;
}

function parseLabels(pairs: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UserError(`--namespace-label must be KEY=VALUE, not "${pair}"`, 2);
    labels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return labels;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The engine's subject of one document, or the card's own problems when it is invalid. */
function subjectOf(
  doc: Exclude<InputDocument, { type: 'other' }>,
  namespace: string,
  namespaceLabels: Record<string, string>,
): { subject?: Subject; name?: string; namespace: string; problems: Problem[] } {
  if (doc.type === 'card') {
    const result = validateCard(doc.card);
    const raw = doc.card as Record<string, unknown>;
    const name = typeof raw?.name === 'string' ? raw.name : undefined;
    if (!result.card) return { name, namespace, problems: result.problems };
    return {
      name,
      namespace,
      problems: result.problems,
      subject: {
        name: name ?? '(unnamed)',
        namespace,
        namespaceLabels,
        adopted: false,
        cards: bareCardViews(raw),
        facts: offlineFacts(undefined, raw),
        signingPath: 'signatures',
      },
    };
  }
  const metadata = (doc.resource.metadata ?? {}) as Record<string, unknown>;
  const ns = typeof metadata.namespace === 'string' ? metadata.namespace : namespace;
  const labels = (metadata.labels ?? {}) as Record<string, string>;
  const spec = doc.resource.spec as Record<string, unknown> | undefined;
  const base = { name: doc.name ?? '(unnamed)', namespace: ns, labels, namespaceLabels };
  if (hasSource(doc.resource)) {
    // The agent's card is not known offline: content rules are not evaluated.
    return {
      name: doc.name,
      namespace: ns,
      problems: [],
      subject: { ...base, adopted: true, facts: offlineFacts(spec) },
    };
  }
  const result = validateResource(doc.resource);
  if (!result.spec || !result.card) return { name: doc.name, namespace: ns, problems: result.problems };
  return {
    name: doc.name,
    namespace: ns,
    problems: result.problems,
    subject: {
      ...base,
      adopted: false,
      cards: specCardViews(result.spec, result.card),
      facts: offlineFacts(result.spec),
    },
  };
}

export async function run(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    process.stdout.write(USAGE);
    return sub === undefined ? 2 : 0;
  }
  if (sub !== 'check') throw new UserError(`unknown policy command '${sub}' (known: check)`, 2);
  const parsed = parseFlags(
    rest,
    {
      file: { type: 'string', short: 'f', multiple: true },
      policy: { type: 'string', short: 'p', multiple: true },
      namespace: { type: 'string', short: 'n', default: 'default' },
      'namespace-label': { type: 'string', multiple: true },
      output: { type: 'string', short: 'o', default: 'text' },
    },
    USAGE,
    true,
  );
  if (!parsed) return 0;
  const { values, positionals } = parsed;
  const files = [...(values.file ?? []), ...positionals];
  if (files.length === 0)
    throw new UserError('no input: give -f FILE or -f DIR (or -f - for standard input)', 2);
  if (!values.policy?.length) throw new UserError('no policy: give --policy FILE or --policy DIR', 2);
  if (values.output !== 'text' && values.output !== 'json')
    throw new UserError(`--output must be text or json, not "${values.output}"`, 2);
  if (!DNS_LABEL.test(values.namespace!))
    throw new UserError(
      `--namespace must be a namespace name (a lower-case DNS label), not "${values.namespace}"`,
      2,
    );
  const namespaceLabels = parseLabels(values['namespace-label'] ?? []);
  const policies = await readPolicies(values.policy, values.namespace!);

  const reports: Report[] = [];
  const empty = { policies: [], failures: [], notEvaluated: [] };
  for (const input of await expandInputs(files)) {
    const source = input.path === '-' ? 'standard input' : input.path;
    let docs: InputDocument[];
    try {
      if (input.type === 'error') throw input.error;
      docs = parseDocuments(await readInput(input.path, MAX_INPUT_BYTES), source);
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      process.stderr.write(`agentcard: ${err.message}\n`);
      reports.push({
        source,
        kind: 'file',
        status: 'invalid',
        problems: [{ path: '(file)', message: err.message, severity: 'error' }],
        ...empty,
      });
      continue;
    }
    let cards = 0;
    for (const doc of docs) {
      if (doc.type === 'other') continue; // the policies themselves, Deployments, Secrets...
      cards++;
      const kind = doc.type === 'manifest' ? 'AgentCard' : 'card';
      const judged = subjectOf(doc, values.namespace!, namespaceLabels);
      const who = {
        source: doc.label,
        kind,
        ...(judged.name ? { name: judged.name } : {}),
        namespace: judged.namespace,
      } as const;
      if (!judged.subject || hasErrors(judged.problems)) {
        reports.push({
          ...who,
          status: 'invalid',
          problems: judged.problems.filter((p) => p.severity === 'error'),
          ...empty,
        });
        continue;
      }
      const results = evaluatePolicies(policies, judged.subject);
      const merged = mergeResults(results);
      reports.push({
        ...who,
        ...(merged.action ? { action: merged.action } : {}),
        status: results.length === 0 ? 'unselected' : merged.action ? 'failing' : 'compliant',
        policies: results,
        failures: merged.failures,
        notEvaluated: merged.notEvaluated,
      });
    }
    if (cards === 0 && !input.fromDirectory)
      reports.push({
        source,
        kind: 'card',
        status: 'invalid',
        problems: [{ path: '(file)', message: 'no AgentCard manifest or card found', severity: 'error' }],
        ...empty,
      });
  }

  if (values.output === 'json') process.stdout.write(JSON.stringify(reports, null, 2) + '\n');
  else printText(reports);
  return reports.some((r) => r.status === 'invalid' || r.action === 'Enforce') ? 1 : 0;
}

function printText(reports: readonly Report[]): void {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  for (const r of reports) {
    if (r.kind === 'file') continue; // already on stderr
    const what = `${r.kind === 'AgentCard' ? 'AgentCard' : 'card'} ${r.name ?? '(unnamed)'} (namespace ${r.namespace})`;
    if (r.status === 'invalid') {
      out(`${r.source}: ${what}: invalid card, not judged (agentcard validate says more)`);
      for (const p of r.problems ?? []) out(`  ${formatProblem(p)}`);
      continue;
    }
    if (r.status === 'unselected') {
      out(`${r.source}: ${what}: no policy selects it`);
      continue;
    }
    const count = `${r.policies.length} polic${r.policies.length === 1 ? 'y' : 'ies'}`;
    out(`${r.source}: ${what}: ${r.action ? `fails (${r.action})` : 'complies'} (${count})`);
    for (const f of r.failures) {
      for (const p of f.failures) {
        for (const v of p.violations)
          out(`  ${p.mode.padEnd(7)}  ${p.policy}, rule ${f.rule}: ${v.path}: ${p.message}; ${v.detail}`);
      }
    }
    for (const n of r.notEvaluated) out(`  not evaluated  ${n.policy}, rule ${n.rule}: ${n.reason}`);
  }
}
