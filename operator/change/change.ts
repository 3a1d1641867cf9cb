/**
 * One classified change between two cards, and the small helpers the comparers share (pure).
 */
import { formatPath, type PathSegment } from '../card/problem.ts';
import { RULES, type ChangeClass, type RuleId } from './rules.ts';

export interface CardChange {
  /** The rule that classified it (operator/change/rules.ts, docs/changes.md). */
  rule: RuleId;
  class: ChangeClass;
  /**
   * JSON path of the item, e.g. `skills[2]` or `supportedInterfaces[0].url`: in the new card,
   * or in the old card for an item that is gone (`side` says which).
   */
  path: string;
  side: 'old' | 'new';
  /** What changed, e.g. a skill id, `JSONRPC https://...`, a scheme name, a media type. */
  item: string;
  /** One line for people. */
  message: string;
  /** The old and new value, for a value that changed in place (a URL, a version). */
  before?: string;
  after?: string;
}

/** Collects changes; every one takes its class from the rule table. */
export class Changes {
  readonly list: CardChange[] = [];

  add(
    rule: RuleId,
    where: { path: readonly PathSegment[]; side: 'old' | 'new' },
    item: string,
    message: string,
    values: { before?: string; after?: string } = {},
  ): void {
    this.list.push({
      rule,
      class: RULES[rule].class,
      path: formatPath(where.path),
      side: where.side,
      item,
      message: oneLine(message),
      ...(values.before !== undefined ? { before: values.before } : {}),
      ...(values.after !== undefined ? { after: values.after } : {}),
    });
  }
}

export const atOld = (...path: PathSegment[]) => ({ path, side: 'old' as const });
export const atNew = (...path: PathSegment[]) => ({ path, side: 'new' as const });

/**
 * A message is built from the cards' own text (names, ids, URLs), which may come from a hostile
 * server: it is kept to one bounded line without control characters, so that nothing a card
 * says can start a line of its own in a log (or a GitHub Actions workflow command).
 */
function oneLine(text: string, max = 500): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}...` : clean;
}

/** Values in `a` that are not in `b`, in `a`'s order, each once. */
export function missingFrom<T>(a: readonly T[], b: readonly T[]): T[] {
  const other = new Set(b);
  return [...new Set(a)].filter((v) => !other.has(v));
}

/** Equality of JSON values, whatever the order of object keys. */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

/** A value quoted for a message. */
export const quote = (v: string | undefined): string => (v === undefined ? '(none)' : JSON.stringify(v));
