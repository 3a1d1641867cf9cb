/**
 * `agentcard probe`: prove that interfaces speak their declared A2A binding, from AgentCard
 * manifests (-f) or one interface given by flags (--url ...). Exit 0 when every probed interface
 * is reachable (interfaces with a binding the probe cannot check do not fail the card), 1
 * otherwise, 2 on a usage error (bad flags, unreadable or unusable manifest).
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { UserError, describeError } from '../../errors.ts';
import { parseDuration as parseSpecDuration, type AgentCardSpec } from '../../card/resource.ts';
import { ProbeLimiter, hostKey } from '../../probe/limiter.ts';
import { type AddressPolicy, createAddressPolicy } from '../../probe/policy.ts';
import { checkHeaders, probeInterface } from '../../probe/probe.ts';
import type { ProbeResult, ProbeTarget } from '../../probe/types.ts';
import { probeTargets } from '../../controllers/agentcard/audiences/probe-targets.ts';

const USAGE = `usage: agentcard probe -f MANIFEST [-f MANIFEST ...] [options]
       agentcard probe --url URL --binding JSONRPC|HTTP+JSON|GRPC [options]

Asks each interface the A2A question of its binding (GetTask for a random id) and says whether
the answer proves the binding and version. MANIFEST: AgentCard manifests (YAML or JSON, several
documents allowed; the interfaces of spec.card and of each audience that is not probe: Disabled,
as the operator probes them) or a plain Agent Card; '-' reads stdin.

options:
  --url URL                  interface URL (gRPC also takes a bare host:port)
  --binding B                protocolBinding of --url
  --protocol-version V       1.0 (default) or 0.3
  --tenant T                 tenant of --url (A2A 1.0)
  --header 'Name: value'     header to send to --url only (repeatable), e.g. credentials
  --timeout D                per-interface deadline, e.g. 5s (default: spec.probe.timeout, else 5s)
  --allow-cidr CIDR          allow probing this private/loopback range (repeatable); link-local
                             and cloud metadata addresses are always refused
  --output text|json         output format (default text)
`;

// Only what the probe needs, validated loosely: the card schema proper is the validator's job.
const InterfaceSchema = z.object({
  url: z.string().min(1),
  protocolBinding: z.string().min(1),
  protocolVersion: z.string().min(1),
  tenant: z.string().optional(),
});
const CardSchema = z.object({ supportedInterfaces: z.array(InterfaceSchema).min(1) });
const AudienceSchema = z.object({
  name: z.string(),
  baseURL: z.string().optional(),
  supportedInterfaces: z.array(InterfaceSchema).optional(),
  probe: z.enum(['Enabled', 'Disabled']).optional(),
});
const ManifestSchema = z.object({
  kind: z.literal('AgentCard'),
  metadata: z.object({ name: z.string().optional() }).optional(),
  spec: z.object({
    card: CardSchema,
    audiences: z.array(AudienceSchema).optional(),
    probe: z
      .object({ timeout: z.string().optional(), credentials: z.array(z.unknown()).optional() })
      .optional(),
  }),
});

interface ProbeJob {
  targets: ProbeTarget[];
  timeoutMs?: number;
  headers?: Record<string, string>;
}

/** A positive duration flag ("500ms", "5s", "1m30s"), parsed as spec.probe's durations are. */
export function parseDuration(text: string): number {
  let ms = 0;
  try {
    ms = parseSpecDuration(text);
  } catch {
    // fall through to the usage error below
  }
  if (ms <= 0) throw new UserError(`'${text}' is not a duration (e.g. 5s, 500ms, 1m)`, 2);
  return ms;
}

function parseHeader(text: string): [string, string] {
  const colon = text.indexOf(':');
  const name = colon > 0 ? text.slice(0, colon).trim() : '';
  if (!name) throw new UserError("--header wants 'Name: value'", 2);
  const value = text.slice(colon + 1).trim();
  try {
    checkHeaders({ [name]: value });
  } catch (err) {
    throw new UserError(`--header: ${describeError(err)}`, 2);
  }
  return [name, value];
}

async function readManifest(path: string): Promise<string> {
  try {
    if (path === '-') {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    }
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as { code?: string }).code;
    throw new UserError(`${path}: cannot read (${code ?? describeError(err)})`, 2);
  }
}

const issuePath = (issue: z.core.$ZodIssue) => issue.path.map(String).join('.') || '(document)';

/** Jobs from the documents of one manifest file. */
export function jobsFromManifest(text: string, source: string): { jobs: ProbeJob[]; notes: string[] } {
  const jobs: ProbeJob[] = [];
  const notes: string[] = [];
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) throw new UserError(`${source}: not YAML or JSON`, 2);
  docs.forEach((doc, i) => {
    const where = docs.length > 1 ? `${source} (document ${i + 1})` : source;
    if (doc.errors.length) throw new UserError(`${where}: ${doc.errors[0]!.message.split('\n', 1)[0]}`, 2);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) return;
    const kind = (value as { kind?: unknown }).kind;
    if (kind !== undefined) {
      if (kind !== 'AgentCard') {
        notes.push(`${where}: skipped kind ${String(kind)}`);
        return;
      }
      const parsed = ManifestSchema.safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new UserError(`${where}: ${issuePath(issue)}: ${issue.message}`, 2);
      }
      const { spec } = parsed.data;
      if (spec.probe?.credentials?.length) {
        notes.push(
          `${where}: spec.probe.credentials name Secrets the CLI does not read; use --url with --header`,
        );
      }
      const timeout = spec.probe?.timeout;
      jobs.push({
        // Every distinct interface across the audiences, as the operator probes them.
        targets: probeTargets(spec as unknown as AgentCardSpec).map(({ audiences: _a, ...t }) => t),
        timeoutMs: timeout ? parseDuration(timeout) : undefined,
      });
      return;
    }
    const card = CardSchema.safeParse(value);
    if (!card.success) {
      throw new UserError(
        `${where}: neither an AgentCard manifest nor an Agent Card with supportedInterfaces`,
        2,
      );
    }
    jobs.push({ targets: card.data.supportedInterfaces });
  });
  return { jobs, notes };
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: false,
      options: {
        file: { type: 'string', short: 'f', multiple: true },
        url: { type: 'string' },
        binding: { type: 'string' },
        'protocol-version': { type: 'string' },
        tenant: { type: 'string' },
        header: { type: 'string', multiple: true },
        timeout: { type: 'string' },
        'allow-cidr': { type: 'string', multiple: true },
        output: { type: 'string', short: 'o' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    throw new UserError(`${describeError(err)} (see agentcard probe --help)`, 2);
  }
}

function formatText(results: ProbeResult[]): string {
  const width = Math.max(...results.map((r) => r.reason.length));
  const lines = results.map((r) => {
    const mark = r.reachable ? 'ok  ' : r.reason === 'Unsupported' ? 'skip' : 'FAIL';
    const latency = `${r.latencyMs}ms`.padStart(7);
    return `${mark} ${r.reason.padEnd(width)} ${latency}  ${r.protocolBinding} ${r.protocolVersion}  ${r.url}\n     ${r.message}`;
  });
  const probed = results.filter((r) => r.reason !== 'Unsupported');
  const up = probed.filter((r) => r.reachable).length;
  return `${lines.join('\n')}\n${up}/${probed.length} reachable\n`;
}

export async function run(argv: string[]): Promise<number> {
  const flags = parse(argv);
  if (flags.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const output = flags.output ?? 'text';
  if (output !== 'text' && output !== 'json')
    throw new UserError(`--output must be text or json, not '${output}'`, 2);
  const files = flags.file ?? [];
  if (files.length && flags.url) throw new UserError('give either -f MANIFEST or --url, not both', 2);
  if (!files.length && !flags.url)
    throw new UserError('nothing to probe: give -f MANIFEST or --url (see agentcard probe --help)', 2);
  if (files.length) {
    for (const flag of ['binding', 'protocol-version', 'tenant', 'header'] as const) {
      if (flags[flag] !== undefined) throw new UserError(`--${flag} goes with --url, not -f`, 2);
    }
  }

  let policy: AddressPolicy;
  try {
    policy = createAddressPolicy({ allowCidrs: flags['allow-cidr'] ?? [] });
  } catch (err) {
    throw new UserError(`--allow-cidr: ${describeError(err)}`, 2);
  }
  const timeoutFlag = flags.timeout === undefined ? undefined : parseDuration(flags.timeout);

  const jobs: ProbeJob[] = [];
  if (flags.url) {
    if (!flags.binding) throw new UserError('--url needs --binding (JSONRPC, HTTP+JSON or GRPC)', 2);
    const target: ProbeTarget = {
      url: flags.url,
      protocolBinding: flags.binding,
      protocolVersion: flags['protocol-version'] ?? '1.0',
    };
    if (flags.tenant) target.tenant = flags.tenant;
    jobs.push({ targets: [target], headers: Object.fromEntries((flags.header ?? []).map(parseHeader)) });
  }
  for (const file of files) {
    const { jobs: found, notes } = jobsFromManifest(await readManifest(file), file === '-' ? 'stdin' : file);
    for (const note of notes) process.stderr.write(`agentcard probe: ${note}\n`);
    jobs.push(...found);
  }
  if (!jobs.length) throw new UserError('no AgentCard with supportedInterfaces found', 2);

  const limiter = new ProbeLimiter({ global: 8, perHost: 4 });
  const results = await Promise.all(
    jobs.flatMap((job) =>
      job.targets.map((target) =>
        limiter.run(hostKey(target.url), () =>
          probeInterface(target, {
            timeoutMs: timeoutFlag ?? job.timeoutMs ?? 5000,
            policy,
            headers: job.headers,
          }),
        ),
      ),
    ),
  );

  if (output === 'json') {
    const shaped = results.map(
      ({ url, protocolBinding, protocolVersion, reachable, reason, message, latencyMs }) => ({
        url,
        protocolBinding,
        protocolVersion,
        reachable,
        reason,
        message,
        latencyMs,
      }),
    );
    process.stdout.write(JSON.stringify({ results: shaped }, null, 2) + '\n');
  } else {
    process.stdout.write(formatText(results));
    if (results.some((r) => r.reason === 'Blocked') && !flags['allow-cidr']?.length) {
      process.stderr.write(
        'agentcard probe: hint: --allow-cidr (e.g. 127.0.0.0/8) allows private or loopback ranges\n',
      );
    }
  }
  return results.every((r) => r.reachable || r.reason === 'Unsupported') ? 0 : 1;
}
