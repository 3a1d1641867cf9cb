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

/** The first place where `value` nests deeper than `maxDepth`, as a problem; else undefined. */
export function nestingProblem(
  value: unknown,
  prefix: readonly PathSegment[] = [],
  maxDepth = MAX_NESTING_DEPTH,
): Problem | undefined {
  const stack: Array<{ node: unknown; depth: number; path: PathSegment[] }> = [
    { node: value, depth: 0, path: [...prefix] },
  ];
  while (stack.length > 0) {
    const { node, depth, path } = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= maxDepth) {
      return {
        path: formatPath(path),
        message: `nested more than ${maxDepth} levels deep (objects and arrays); flatten it (free-form fields such as extension params included)`,
        severity: 'error',
      };
    }
    if (Array.isArray(node)) {
      node.forEach((child, i) => stack.push({ node: child, depth: depth + 1, path: [...path, i] }));
    } else {
      for (const [key, child] of Object.entries(node)) {
        stack.push({ node: child, depth: depth + 1, path: [...path, key] });
      }
    }
  }
  return undefined;
}
