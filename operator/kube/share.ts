/**
 * Structural sharing between two versions of one object, as an informer caches them.
 *
 * Every watch event is parsed anew, so each version of an object arrives as a whole new tree: its
 * name, namespace, uid and times, its spec, the conditions that did not change, each a new copy.
 * Whoever kept a piece of the previous version (a metrics record its digest, the probe scheduler
 * its URLs, an index its keys) then holds a copy the cache no longer shares, and the previous tree
 * itself has usually lived long enough to be in V8's old generation, where only a full collection
 * frees it. Handing the new version the previous version's equal parts instead keeps one copy of
 * each, and leaves the new parse's duplicates to die young.
 *
 * The values are JSON: objects, arrays, strings, numbers, booleans and null. Equal strings share
 * the previous copy too (=== compares strings by value, and the previous string is kept).
 */

type Json = unknown;

/**
 * Returns `next` with every part equal to the same part of `previous` replaced by `previous`'s
 * (in place: `next`'s objects and arrays get previous values assigned to their existing keys,
 * which keeps their shape). The result is `previous` itself when the two are equal throughout.
 */
export function shareUnchanged(previous: Json, next: Json): Json {
  if (previous === next) return previous;
  if (typeof previous !== 'object' || typeof next !== 'object' || previous === null || next === null)
    return next;
  if (Array.isArray(previous) !== Array.isArray(next)) return next;
  if (Array.isArray(next)) {
    const before = previous as Json[];
    let same = before.length === next.length;
    for (let i = 0; i < next.length && i < before.length; i++) {
      const shared = shareUnchanged(before[i], next[i]);
      if (shared !== before[i]) same = false;
      next[i] = shared;
    }
    return same ? previous : next;
  }
  const before = previous as Record<string, Json>;
  const after = next as Record<string, Json>;
  let same = true;
  let afterKeys = 0;
  for (const key in after) {
    if (!Object.hasOwn(after, key)) continue;
    afterKeys++;
    if (!Object.hasOwn(before, key)) {
      same = false;
      continue;
    }
    const shared = shareUnchanged(before[key], after[key]);
    if (shared !== before[key]) same = false;
    after[key] = shared;
  }
  if (!same) return next;
  // Every key of `next` is in `previous` with an equal value: equal if `previous` has no other.
  let beforeKeys = 0;
  for (const key in before) if (Object.hasOwn(before, key)) beforeKeys++;
  return beforeKeys === afterKeys ? previous : next;
}

/**
 * The new version of a cached object with the previous version's equal parts (shareUnchanged),
 * itself always the new object: the cache and its handlers tell the versions apart by identity.
 */
export function shareWithPrevious<T extends object>(previous: T | undefined, next: T): T {
  if (!previous) return next;
  const after = next as Record<string, Json>;
  const before = previous as Record<string, Json>;
  for (const key in after)
    if (Object.hasOwn(after, key) && Object.hasOwn(before, key))
      after[key] = shareUnchanged(before[key], after[key]);
  return next;
}
