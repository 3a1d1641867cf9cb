/**
 * metav1.LabelSelector matching, as the API server and client-go's labels.Selector do it:
 * matchLabels and every matchExpression must all hold; an empty or absent selector matches
 * everything (as a Deployment's or a NetworkPolicy's namespaceSelector `{}` does).
 */
import type { LabelSelector } from './resource.ts';

export function matchesSelector(
  selector: LabelSelector | undefined,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  if (!selector) return true;
  const have = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (have[key] !== value) return false;
  }
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const present = Object.hasOwn(have, key);
    switch (operator) {
      case 'In':
        if (!present || !values.includes(have[key]!)) return false;
        break;
      case 'NotIn':
        // NotIn matches objects without the label too (labels.Selector semantics).
        if (present && values.includes(have[key]!)) return false;
        break;
      case 'Exists':
        if (!present) return false;
        break;
      case 'DoesNotExist':
        if (present) return false;
        break;
    }
  }
  return true;
}
