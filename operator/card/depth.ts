/**
 * A nesting limit checked before anything recursive touches the input. Free-form fields
 * (extension params, protobuf Struct values; the JWS header of a signature) accept any JSON, and
 * the API server stores documents nested about 1,500 levels deep; the schema validation, the
 * credential scan and JSON.stringify are recursive and would overflow the stack on them
 * ("Maximum call stack size exceeded": no condition, no status, retried forever). This walk keeps
 * its own stack, so it cannot overflow, and stops at the first node past the limit.
 */
import { formatPath, type PathSegment, type Problem } from './problem.ts';

/**
 * Levels of objects and arrays allowed from the card (or spec) root. The A2A structure itself
 * uses at most 6 (spec.card.capabilities.extensions[i].params), leaving free-form fields 25 or
 * more levels: far beyond any real configuration, far below any stack limit.
 */
export const MAX_NESTING_DEPTH = 32;

/** A container being walked: its keys (none for an array) and the index of the next child. */
interface Frame {
  node: Record<string, unknown> | unknown[];
  keys: string[] | undefined;
  next: number;
}

const frameOf = (node: object): Frame =>
  Array.isArray(node)
    ? { node, keys: undefined, next: 0 }
    : { node: node as Record<string, unknown>, keys: Object.keys(node), next: 0 };

/**
 * The first place, in document order, where `value` nests deeper than `maxDepth`, as a problem;
 * else undefined. The stack of containers being walked is the path to the current node, so the
 * walk copies a path only for the problem it reports: it runs over every spec of every reconcile.
 */
export function nestingProblem(
  value: unknown,
  prefix: readonly PathSegment[] = [],
  maxDepth = MAX_NESTING_DEPTH,
): Problem | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (maxDepth <= 0) return tooDeep(prefix, [], maxDepth);
  const frames: Frame[] = [frameOf(value)];
  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!;
    const { node, keys } = frame;
    const size = keys ? keys.length : (node as unknown[]).length;
    if (frame.next >= size) {
      frames.pop();
      continue;
    }
    const index = frame.next++;
    const child = keys ? (node as Record<string, unknown>)[keys[index]!] : (node as unknown[])[index];
    if (child === null || typeof child !== 'object') continue;
    // The child's depth is the number of containers above it.
    if (frames.length >= maxDepth) return tooDeep(prefix, frames, maxDepth);
    frames.push(frameOf(child));
  }
  return undefined;
}

/** The problem for the node that each frame's last visited child leads to. */
function tooDeep(prefix: readonly PathSegment[], frames: readonly Frame[], maxDepth: number): Problem {
  const path: PathSegment[] = [...prefix];
  for (const { keys, next } of frames) path.push(keys ? keys[next - 1]! : next - 1);
  return {
    path: formatPath(path),
    message: `nested more than ${maxDepth} levels deep (objects and arrays); flatten it (free-form fields such as extension params included)`,
    severity: 'error',
  };
}
