/**
 * Security compared (pure): the requirements of the card and of each skill, and the schemes.
 *
 * A2A 1.0 models both on OpenAPI (sections 4.4.1 and 4.5): `securityRequirements` lists
 * alternatives, any one of which suffices; each alternative maps scheme names to the scopes it
 * needs, all together. No list (or an empty alternative) means a caller needs nothing. A change
 * breaks a caller when an alternative it could satisfy before is satisfied by no alternative of
 * the new card: that is "tightened", whatever moved (a scheme or a scope added, an alternative
 * dropped). Schemes are identified by their name, the key that requirements refer to.
 */
import type { PathSegment } from '../card/problem.ts';
import type { SecurityRequirement, SecurityScheme } from '../card/schema.ts';
import { atNew, atOld, missingFrom, quote, sameJson, type Changes } from './change.ts';

/** One alternative: scheme name -> the scopes it needs. */
type Alternative = Map<string, Set<string>>;

function alternatives(requirements: readonly SecurityRequirement[] | undefined): Alternative[] {
  return (requirements ?? []).map(
    (r) =>
      new Map(Object.entries(r.schemes ?? {}).map(([name, scopes]) => [name, new Set(scopes.list ?? [])])),
  );
}

/** Whether a caller needs nothing: no requirement, or an alternative that asks for nothing. */
const isOpen = (alts: readonly Alternative[]) => alts.length === 0 || alts.some((a) => a.size === 0);

/** Whether a caller equipped for `had` can satisfy `needs`. */
function satisfies(had: Alternative, needs: Alternative): boolean {
  for (const [scheme, scopes] of needs) {
    const held = had.get(scheme);
    if (!held) return false;
    for (const scope of scopes) if (!held.has(scope)) return false;
  }
  return true;
}

const same = (a: Alternative, b: Alternative) => satisfies(a, b) && satisfies(b, a);

/** What `needs` asks beyond `had`: schemes, and scopes of schemes both name. */
function extras(had: Alternative, needs: Alternative): Array<{ scheme: string; scope?: string }> {
  const out: Array<{ scheme: string; scope?: string }> = [];
  for (const [scheme, scopes] of needs) {
    const held = had.get(scheme);
    if (!held) out.push({ scheme });
    else for (const scope of scopes) if (!held.has(scope)) out.push({ scheme, scope });
  }
  return out;
}

function describe(alt: Alternative): string {
  if (alt.size === 0) return 'no authentication';
  return [...alt]
    .map(([scheme, scopes]) => (scopes.size ? `${scheme} (${[...scopes].join(', ')})` : scheme))
    .join(' and ');
}

/**
 * Compares the requirements of the card (`at` empty) or of one skill (`at` its path); `whose`
 * starts the messages of a skill's ("skill x: "), and is empty for the card's.
 */
export function compareRequirements(
  before: readonly SecurityRequirement[] | undefined,
  after: readonly SecurityRequirement[] | undefined,
  at: { old: PathSegment[]; new: PathSegment[] },
  whose: string,
  changes: Changes,
): void {
  const olds = alternatives(before);
  const news = alternatives(after);
  const path = (...rest: PathSegment[]) => atNew(...at.new, 'securityRequirements', ...rest);
  if (isOpen(olds) && !isOpen(news)) {
    changes.add(
      'security-required',
      path(),
      news.map(describe).join(' | '),
      `${whose}authentication now required: ${news.map(describe).join(', or ')}`,
    );
    return;
  }
  if (!isOpen(olds) && isOpen(news)) {
    changes.add(
      'security-relaxed',
      after?.length ? path() : atOld(...at.old, 'securityRequirements'),
      'no authentication',
      `${whose}authentication no longer required`,
    );
    return;
  }

  // Section 7.4: the server authenticates every request against what it declares. An
  // alternative that no new alternative accepts locks out the callers that used it.
  const explained = new Set<number>();
  const reported = new Set<string>();
  for (const had of olds) {
    if (news.some((needs) => satisfies(had, needs))) continue;
    // Name what the closest new alternative asks beyond it: the one that keeps most of its
    // schemes (the same alternative, changed), then the one that asks least.
    let best = -1;
    let bestScore = [0, 0];
    let bestExtras: ReturnType<typeof extras> = [];
    news.forEach((needs, j) => {
      const e = extras(had, needs);
      const score = [[...needs.keys()].filter((s) => had.has(s)).length, -e.length];
      const better = score[0]! > bestScore[0]! || (score[0] === bestScore[0] && score[1]! > bestScore[1]!);
      if (best < 0 || better) [best, bestScore, bestExtras] = [j, score, e];
    });
    explained.add(best);
    for (const { scheme, scope } of bestExtras) {
      const item = scope === undefined ? scheme : `${scheme} ${scope}`;
      if (reported.has(item)) continue;
      reported.add(item);
      changes.add(
        'security-tightened',
        scope === undefined ? path(best, 'schemes', scheme) : path(best, 'schemes', scheme, 'list'),
        item,
        `${whose}${describe(had)} no longer suffices: ${scope === undefined ? `scheme ${scheme}` : `scope ${scope} of ${scheme}`} now required`,
      );
    }
  }
  news.forEach((needs, j) => {
    if (explained.has(j) || olds.some((had) => same(had, needs))) return;
    changes.add('security-relaxed', path(j), describe(needs), `${whose}${describe(needs)} now accepted`);
  });
}

type Json = Record<string, unknown>;

/** The one kind of a scheme (its single key, section 4.5.1) and its settings. */
function kindOf(scheme: SecurityScheme): [string, Json] {
  const [kind, value] = Object.entries(scheme).find(([, v]) => v !== undefined) ?? ['', {}];
  return [kind, (value ?? {}) as Json];
}

const text = (v: unknown): string | undefined =>
  v === undefined ? undefined : typeof v === 'string' ? v : JSON.stringify(v);

export function compareSchemes(
  before: Record<string, SecurityScheme> | undefined,
  after: Record<string, SecurityScheme> | undefined,
  changes: Changes,
): void {
  const olds = before ?? {};
  const news = after ?? {};
  for (const name of missingFrom(Object.keys(olds), Object.keys(news))) {
    changes.add(
      'security-scheme-removed',
      atOld('securitySchemes', name),
      name,
      `security scheme ${name} removed`,
    );
  }
  for (const name of missingFrom(Object.keys(news), Object.keys(olds))) {
    changes.add(
      'security-scheme-added',
      atNew('securitySchemes', name),
      name,
      `security scheme ${name} added`,
    );
  }
  for (const name of Object.keys(news)) {
    if (olds[name] === undefined) continue;
    const [oldKind, o] = kindOf(olds[name]);
    const [newKind, n] = kindOf(news[name]!);
    if (oldKind !== newKind) {
      changes.add(
        'security-scheme-changed',
        atNew('securitySchemes', name),
        name,
        `security scheme ${name}: ${oldKind} -> ${newKind}`,
        { before: oldKind, after: newKind },
      );
      continue;
    }
    const at = ['securitySchemes', name, newKind];
    if (o.description !== n.description) {
      changes.add(
        'security-scheme-text-changed',
        atNew(...at, 'description'),
        name,
        `security scheme ${name}: description changed`,
      );
    }
    compareSettings(o, n, ['description', 'flows'], at, name, changes);
    if (newKind === 'oauth2SecurityScheme')
      compareFlows(o.flows as Json, n.flows as Json, [...at, 'flows'], name, changes);
  }
}

/** Every setting but `skip`: a value added, changed or removed is a change callers must follow. */
function compareSettings(
  o: Json,
  n: Json,
  skip: readonly string[],
  at: PathSegment[],
  name: string,
  changes: Changes,
): void {
  const fields = [...new Set([...Object.keys(o), ...Object.keys(n)])].filter((f) => !skip.includes(f));
  for (const field of fields) {
    if (sameJson(o[field], n[field])) continue;
    const [before, after] = [text(o[field]), text(n[field])];
    changes.add(
      'security-scheme-changed',
      n[field] === undefined ? atOld(...at, field) : atNew(...at, field),
      name,
      `security scheme ${name}: ${field} ${quote(before)} -> ${quote(after)}`,
      { ...(before !== undefined ? { before } : {}), ...(after !== undefined ? { after } : {}) },
    );
  }
}

/** OAuth flows (section 4.5.7): one flow each; its URLs, PKCE and scopes. */
function compareFlows(o: Json, n: Json, at: PathSegment[], name: string, changes: Changes): void {
  const [oldFlow, of] = kindOf(o as SecurityScheme);
  const [newFlow, nf] = kindOf(n as SecurityScheme);
  if (oldFlow !== newFlow) {
    changes.add(
      'security-scheme-changed',
      atNew(...at),
      name,
      `security scheme ${name}: OAuth flow ${oldFlow} -> ${newFlow}`,
      { before: oldFlow, after: newFlow },
    );
    return;
  }
  const flowAt = [...at, newFlow];
  compareSettings(of, nf, ['scopes', 'pkceRequired'], flowAt, name, changes);
  const [pkceBefore, pkceAfter] = [of.pkceRequired === true, nf.pkceRequired === true];
  if (pkceBefore !== pkceAfter) {
    changes.add(
      pkceAfter ? 'security-scheme-changed' : 'security-scheme-relaxed',
      pkceAfter ? atNew(...flowAt, 'pkceRequired') : atOld(...flowAt, 'pkceRequired'),
      name,
      `security scheme ${name}: PKCE ${pkceAfter ? 'now required' : 'no longer required'}`,
    );
  }
  const oldScopes = (of.scopes ?? {}) as Record<string, string>;
  const newScopes = (nf.scopes ?? {}) as Record<string, string>;
  for (const scope of missingFrom(Object.keys(oldScopes), Object.keys(newScopes))) {
    changes.add(
      'oauth-scope-removed',
      atOld(...flowAt, 'scopes', scope),
      `${name} ${scope}`,
      `security scheme ${name}: scope ${scope} removed`,
    );
  }
  for (const scope of Object.keys(newScopes)) {
    if (!(scope in oldScopes)) {
      changes.add(
        'oauth-scope-added',
        atNew(...flowAt, 'scopes', scope),
        `${name} ${scope}`,
        `security scheme ${name}: scope ${scope} added`,
      );
    } else if (oldScopes[scope] !== newScopes[scope]) {
      changes.add(
        'security-scheme-text-changed',
        atNew(...flowAt, 'scopes', scope),
        `${name} ${scope}`,
        `security scheme ${name}: description of scope ${scope} changed`,
      );
    }
  }
}
