/**
 * `--skill`, `--tag` and `--text`: which discovered cards are listed. A flag given several
 * times matches any of its values; different flags must all match. Comparison ignores case.
 */
import type { CardReport } from './report.ts';

export interface CardFilter {
  /** A skill's id or name. */
  skills?: string[];
  /** A skill's tag or the catalog entry's tag. */
  tags?: string[];
  /** Words found in the name, description, skills or catalog entry. */
  texts?: string[];
}

const lower = (s: string) => s.toLowerCase();

export function isFilterEmpty(filter: CardFilter): boolean {
  return !filter.skills?.length && !filter.tags?.length && !filter.texts?.length;
}

export function matchesFilter(card: CardReport, filter: CardFilter): boolean {
  if (filter.skills?.length) {
    const wanted = new Set(filter.skills.map(lower));
    if (!card.skills.some((s) => wanted.has(lower(s.id)) || wanted.has(lower(s.name)))) return false;
  }
  if (filter.tags?.length) {
    const wanted = new Set(filter.tags.map(lower));
    const tags = [...card.skills.flatMap((s) => s.tags), ...(card.entry?.tags ?? [])].map(lower);
    if (!tags.some((t) => wanted.has(t))) return false;
  }
  if (filter.texts?.length) {
    const haystack = lower(
      [
        card.name,
        card.description,
        card.entry?.displayName,
        card.entry?.description,
        card.entry?.identifier,
        ...card.skills.flatMap((s) => [s.id, s.name, s.description, ...s.tags]),
      ]
        .filter(Boolean)
        .join('\n'),
    );
    if (!filter.texts.some((t) => haystack.includes(lower(t)))) return false;
  }
  return true;
}
