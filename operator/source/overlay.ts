/**
 * The card an AgentCard publishes when it adopts the agent's own (pure): the source's card
 * (already in the 1.0 shape, convert.ts), minus the fields of spec.remove (RFC 6901 JSON
 * Pointers), with spec.card applied on top. The merge rules (docs/adopt.md):
 *
 * - a field of spec.card replaces the source's field of the same name;
 * - objects merge key by key, recursively (capabilities, provider, securitySchemes and each
 *   scheme): spec.card's keys win, the source's other keys stay;
 * - lists replace as a whole (supportedInterfaces, skills, defaultInputModes...): a list cannot
 *   be merged item by item without a key, and a partial skill list would be a surprise;
 * - spec.remove applies to the source's card before the merge, so spec.card can put back what
 *   it removed; a pointer that matches nothing is reported, not an error (the agent's card may
 *   lose the field on its own).
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** The reference tokens of a JSON Pointer (RFC 6901 section 3; "~1" is "/", "~0" is "~"). */
export function pointerTokens(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/'))
    throw new Error(`"${pointer}" is not a JSON Pointer (it must start with "/")`);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** An array index token: digits without a leading zero (RFC 6901 section 4). */
const INDEX = /^(0|[1-9][0-9]*)$/;

/**
 * The card without the fields the pointers name. Every pointer is resolved against the card as
 * given (not as left by the previous ones), so "/skills/0" and "/skills/1" remove the first two
 * skills. Returns the new card and the pointers that matched nothing.
 */
export function removeFields(card: Json, pointers: readonly string[]): { card: Json; unmatched: string[] } {
  const copy = structuredClone(card);
  const unmatched: string[] = [];
  const fromObjects: Array<{ parent: Json; key: string }> = [];
  const fromArrays = new Map<unknown[], Set<number>>();
  for (const pointer of pointers) {
    const tokens = pointerTokens(pointer);
    let parent: unknown = copy;
    for (const token of tokens.slice(0, -1)) {
      if (Array.isArray(parent)) parent = INDEX.test(token) ? parent[Number(token)] : undefined;
      else if (isObject(parent)) parent = Object.hasOwn(parent, token) ? parent[token] : undefined;
      else parent = undefined;
    }
    const last = tokens[tokens.length - 1];
    if (last === undefined) {
      unmatched.push(pointer);
    } else if (Array.isArray(parent) && INDEX.test(last) && Number(last) < parent.length) {
      const indices = fromArrays.get(parent) ?? new Set<number>();
      indices.add(Number(last));
      fromArrays.set(parent, indices);
    } else if (isObject(parent) && Object.hasOwn(parent, last)) {
      fromObjects.push({ parent, key: last });
    } else {
      unmatched.push(pointer);
    }
  }
  // Items first, highest index first, so that no removal shifts another's target.
  for (const [array, indices] of fromArrays) {
    for (const i of [...indices].sort((a, b) => b - a)) array.splice(i, 1);
  }
  for (const { parent, key } of fromObjects) delete parent[key];
  return { card: copy, unmatched };
}

/** `overlay` applied on `base`: objects merge key by key, anything else (lists too) replaces. */
export function mergeOverlay(base: Json, overlay: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(overlay)) {
    if (value === undefined) continue;
    const under = out[key];
    out[key] = isObject(value) && isObject(under) ? mergeOverlay(under, value) : structuredClone(value);
  }
  return out;
}

/** The fields of spec that shape the card; the rest (signing, serving, probe, audiences) pass through. */
export interface AdoptedSpecInput {
  remove?: readonly string[];
  card?: Json;
}

/** The published card's input: the source's card, spec.remove applied, spec.card on top. */
export function adoptedCard(source: Json, spec: AdoptedSpecInput): { card: Json; unmatched: string[] } {
  const removed = removeFields(source, spec.remove ?? []);
  return { card: mergeOverlay(removed.card, spec.card ?? {}), unmatched: removed.unmatched };
}

/**
 * The spec a written card would have: spec.card replaced by the adopted card, spec.source and
 * spec.remove gone. The card engine validates, renders, signs and publishes it unchanged.
 */
export function effectiveSpec(spec: Json, card: Json): Json {
  const { source: _source, remove: _remove, card: _overlay, ...rest } = spec;
  return { ...rest, card };
}
