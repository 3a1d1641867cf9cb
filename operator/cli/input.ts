/**
 * I/O shared by the card commands of the CLI (validate, render, sign, verify, keygen): flag
 * parsing, bounded file reading, and splitting YAML/JSON input into AgentCard manifests and
 * bare cards. Every failure is a one-line UserError that names the file and the problem.
 */
import { open } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseAllDocuments, parseDocument } from 'yaml';
import { UserError } from '../errors.ts';
import { formatProblem, hasErrors, type Problem } from '../card/problem.ts';
import { type AgentCardSpec } from '../card/resource.ts';
import { API_VERSION, KIND } from '../api/names.ts';
import type { AgentCard } from '../card/schema.ts';
import { serializeCard } from '../card/serialize.ts';
import {
  hasSource,
  validateCard,
  validateResource,
  validateSourceResource,
  type ValidateOptions,
} from '../card/validate.ts';
import { resolveSourceSpec } from '../source/resolve.ts';
import { DEFAULT_AUDIENCE } from '../card/audience.ts';
import { audienceVariants, type AudienceVariant } from '../card/variants.ts';

/** Manifests and cards: a 1 MiB card is already refused by clients; allow a few per file. */
export const MAX_INPUT_BYTES = 4 * 1024 * 1024;
/** Keys and key sets. */
export const MAX_KEY_BYTES = 64 * 1024;
export const MAX_JWKS_BYTES = 1024 * 1024;

type Options = NonNullable<ParseArgsConfig['options']>;

/** node:util parseArgs with usage errors (exit code 2) instead of exceptions; handles --help. */
export function parseFlags<O extends Options>(
  argv: string[],
  options: O,
  usage: string,
  allowPositionals = false,
):
  | {
      values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true }>>['values'];
      positionals: string[];
    }
  | undefined {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    return undefined;
  }
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals, strict: true });
    return { values, positionals };
  } catch (err) {
    const message = err instanceof Error ? err.message.split('\n', 1)[0]! : String(err);
    const option = /^Unknown option '([^']+)'/.exec(message)?.[1];
    throw new UserError(`${option ? `unknown option ${option}` : message} (see --help)`, 2);
  }
}

const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'a parent is not a directory',
  ELOOP: 'too many symbolic links',
  EMFILE: 'too many open files',
};

function ioError(file: string, err: unknown): UserError {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  return new UserError(`cannot read ${file}: ${REASONS[code] ?? (code || 'read error')}`);
}

const tooBig = (file: string, size: string, max: number) =>
  new UserError(`${file} is ${size}; the limit is ${max} bytes (${Math.round(max / 1024)} KiB)`);

function decode(file: string, bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new UserError(`${file} is not UTF-8 text`);
  }
}

/**
 * Reads a file (or standard input for "-") as UTF-8 text, refusing anything over `maxBytes`:
 * by its size before reading when the file system knows it, and while reading otherwise.
 */
export async function readInput(file: string, maxBytes: number): Promise<string> {
  if (file === '-') return readStdin(maxBytes);
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    throw ioError(file, err);
  }
  try {
    const stat = await handle.stat();
    if (stat.isDirectory()) throw new UserError(`cannot read ${file}: is a directory`);
    if (stat.size > maxBytes) throw tooBig(file, `${stat.size} bytes`, maxBytes);
    // Read in chunks up to the limit: the size may be unknown (pipes, /proc) or change meanwhile.
    const chunks: Buffer[] = [];
    let length = 0;
    for (;;) {
      const chunk = Buffer.alloc(64 * 1024);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > maxBytes) throw tooBig(file, `over ${maxBytes} bytes`, maxBytes);
      chunks.push(chunk.subarray(0, bytesRead));
    }
    return decode(file, Buffer.concat(chunks));
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw ioError(file, err);
  } finally {
    await handle.close();
  }
}

async function readStdin(maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of process.stdin) {
    length += (chunk as Buffer).length;
    if (length > maxBytes) {
      process.stdin.destroy();
      throw tooBig('standard input', `over ${maxBytes} bytes`, maxBytes);
    }
    chunks.push(chunk as Buffer);
  }
  return decode('standard input', Buffer.concat(chunks));
}

/** One document of an input file. */
export type InputDocument =
  | { type: 'manifest'; label: string; name?: string; resource: Record<string, unknown> }
  | { type: 'card'; label: string; card: unknown }
  | { type: 'other'; label: string; resource?: Record<string, unknown> };

/**
 * Splits YAML or JSON text (JSON is YAML) into documents: AgentCard manifests, bare cards
 * (objects without apiVersion/kind) and other Kubernetes objects (e.g. the key's Secret).
 */
export function parseDocuments(text: string, source: string): InputDocument[] {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    // JSON: parsed as JSON for exact error positions (and speed).
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      // Keep the position when there is one, never the quoted excerpt of the input.
      const reason = (err as Error).message
        .split('\n', 1)[0]!
        .replace(/^Unexpected token '(.)', .* is not valid JSON$/, "unexpected '$1'")
        .replace(/, .* is not valid JSON$/, '');
      throw new UserError(`${source}: not valid JSON: ${reason}`);
    }
    // JSON.parse keeps the last of duplicate keys silently; other parsers may keep the first.
    const duplicate = parseDocument(text, { uniqueKeys: true }).errors.find(
      (e) => e.code === 'DUPLICATE_KEY',
    );
    if (duplicate) {
      const at = duplicate.linePos?.[0];
      throw new UserError(`${source}: duplicate key${at ? ` at line ${at.line}, column ${at.col}` : ''}`);
    }
    return classify([value], source);
  }
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [docs];
  const values: unknown[] = [];
  for (const doc of list) {
    const error = doc.errors[0];
    if (error) {
      const at = error.linePos?.[0];
      const where = at ? ` at line ${at.line}, column ${at.col}` : '';
      const what = error.message.split('\n', 1)[0]!.replace(/ at line \d+, column \d+.*$/, '');
      throw new UserError(`${source}: not valid YAML${where}: ${what}`);
    }
    try {
      values.push(doc.toJS({ maxAliasCount: 100 }));
    } catch (err) {
      throw new UserError(`${source}: ${err instanceof Error ? err.message.split('\n', 1)[0] : String(err)}`);
    }
  }
  return classify(values, source);
}

function classify(values: unknown[], source: string): InputDocument[] {
  const out: InputDocument[] = [];
  values.forEach((value, index) => {
    if (value === null || value === undefined) return; // an empty document
    const label = values.length > 1 ? `${source}#${index + 1}` : source;
    if (typeof value === 'object' && !Array.isArray(value) && ('apiVersion' in value || 'kind' in value)) {
      const obj = value as Record<string, unknown>;
      const metadata = obj.metadata as Record<string, unknown> | undefined;
      const name = typeof metadata?.name === 'string' ? metadata.name : undefined;
      if (obj.apiVersion === API_VERSION && obj.kind === KIND)
        out.push({ type: 'manifest', label, name, resource: obj });
      else
        out.push({
          type: 'other',
          label: `${label} (${String(obj.kind)}${name ? ` ${name}` : ''})`,
          resource: obj,
        });
      return;
    }
    out.push({ type: 'card', label, card: value });
  });
  return out;
}

/** The error of a command asked for a card taken from the agent without the agent's card. */
export const needsSourceCard = (label: string): UserError =>
  new UserError(
    `${label}: the card comes from the agent (spec.source); give --source-card FILE (the agent's card) or --fetch`,
    2,
  );

/** How a command gets the agent's own card of a manifest with spec.source (./source-card.ts). */
export type SourceCardReader = (
  label: string,
  resource: Record<string, unknown>,
) => Promise<{ served: Record<string, unknown>; from: string }>;

/**
 * A manifest with spec.source, resolved as the controller resolves it: its spec checked alone
 * first (a bad spec.source or overlay is reported before anything is read or fetched), then the
 * agent's card merged in (operator/source/resolve.ts) and the result validated as a written card.
 * spec.remove pointers that match nothing are warnings, as in the operator's condition message.
 */
export async function validateAdopted(
  label: string,
  resource: Record<string, unknown>,
  readSource: SourceCardReader,
  opts: ValidateOptions,
): Promise<{ card?: AgentCard; spec?: AgentCardSpec; problems: Problem[]; from?: string }> {
  const offline = validateSourceResource(resource, opts);
  if (hasErrors(offline.problems)) return { problems: offline.problems };
  const { served, from } = await readSource(label, resource);
  const resolved = resolveSourceSpec(resource.spec as Record<string, unknown>, served);
  const result = validateResource({ ...resource, spec: resolved.spec }, opts);
  const unmatched: Problem[] = resolved.unmatched.map((pointer) => ({
    path: 'spec.remove',
    message: `"${pointer}" matches nothing in the agent's card`,
    severity: 'warning',
  }));
  return { ...result, problems: [...result.problems, ...unmatched], from };
}

/** The one card or AgentCard manifest of a file's documents (by `name` when there are several). */
export function oneCardDocument(
  text: string,
  source: string,
  name?: string,
): Exclude<InputDocument, { type: 'other' }> {
  const docs = parseDocuments(text, source).filter(
    (d) => d.type !== 'other' && (name === undefined || nameOf(d) === name),
  ) as Exclude<InputDocument, { type: 'other' }>[];
  if (docs.length === 0) {
    throw new UserError(
      `${source}: no AgentCard manifest or card${name === undefined ? '' : ` named "${name}"`} found`,
    );
  }
  if (docs.length > 1) throw new UserError(`${source}: ${docs.length} cards found; choose one with --name`);
  return docs[0]!;
}

/**
 * The card of a file holding one AgentCard manifest or one bare card (`name` picks one of
 * several). A manifest with spec.source needs `readSource` (the agent's card); without it, the
 * error names the flags that give it.
 */
export async function loadOneCard(
  file: string,
  opts: { name?: string; strict?: boolean; readSource?: SourceCardReader; sourceFlags?: boolean } = {},
): Promise<{ label: string; card: AgentCard; spec?: AgentCardSpec; problems: Problem[] }> {
  const source = file === '-' ? 'standard input' : file;
  const doc = oneCardDocument(await readInput(file, MAX_INPUT_BYTES), source, opts.name);
  const adopting = doc.type === 'manifest' && hasSource(doc.resource);
  if (opts.sourceFlags && !adopting)
    throw new UserError(`${doc.label}: --source-card and --fetch are for an AgentCard with spec.source`, 2);
  const missing: SourceCardReader = async (label) => {
    throw needsSourceCard(label);
  };
  const result: { card?: AgentCard; spec?: AgentCardSpec; problems: Problem[] } =
    doc.type === 'card'
      ? validateCard(doc.card, opts)
      : adopting
        ? await validateAdopted(doc.label, doc.resource, opts.readSource ?? missing, opts)
        : validateResource(doc.resource, opts);
  if (!result.card) {
    for (const p of result.problems) process.stderr.write(`${doc.label}: ${formatProblem(p)}\n`);
    const count = result.problems.filter((p) => p.severity === 'error').length;
    throw new UserError(`${doc.label}: invalid card (${count} error${count === 1 ? '' : 's'})`);
  }
  return { label: doc.label, card: result.card, spec: result.spec, problems: result.problems };
}

/** The name of a document: a manifest's metadata.name, or a card's name. */
function nameOf(doc: InputDocument): string | undefined {
  if (doc.type === 'manifest') return doc.name;
  if (doc.type === 'card' && doc.card && typeof doc.card === 'object') {
    const name = (doc.card as Record<string, unknown>).name;
    return typeof name === 'string' ? name : undefined;
  }
  return undefined;
}

/** Prints problems (warnings, typically) on standard error as `label: path: message`. */
export function printProblems(label: string, problems: readonly Problem[]): void {
  for (const p of problems) process.stderr.write(`${label}: ${formatProblem(p)}\n`);
}

/** JSON for standard output: indented, or the exact published bytes with `compact`. */
export function formatJson(value: Record<string, unknown>, compact: boolean): string {
  return (compact ? serializeCard(value) : JSON.stringify(value, null, 2)) + '\n';
}

/**
 * The card of audience `name` (spec.audiences[].name, or "default" for spec.card) of a loaded
 * manifest; a bare card has only the default audience.
 */
export function pickAudience(
  loaded: { label: string; card: AgentCard; spec?: AgentCardSpec },
  name: string | undefined,
): AgentCard {
  if (name === undefined || name === DEFAULT_AUDIENCE) return loaded.card;
  if (!loaded.spec) {
    throw new UserError(
      `${loaded.label}: --audience needs an AgentCard manifest (a bare card has no audiences)`,
      2,
    );
  }
  const variants = audienceVariants(loaded.spec, loaded.card);
  const found = variants.find((v) => v.name === name);
  if (!found) {
    throw new UserError(
      `${loaded.label}: no audience "${name}" (audiences: ${variants.map((v) => v.name).join(', ')})`,
      2,
    );
  }
  return found.card;
}

/** Every audience of a loaded manifest (the default one only, for a bare card). */
export function allAudiences(loaded: { card: AgentCard; spec?: AgentCardSpec }): AudienceVariant[] {
  return loaded.spec
    ? audienceVariants(loaded.spec, loaded.card)
    : [{ name: DEFAULT_AUDIENCE, hosts: [], card: loaded.card, probed: true }];
}
