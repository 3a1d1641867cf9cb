/**
 * Instructions in a card: a system prompt or operating instructions pasted into a description
 * or a skill. A card is public (A2A spec section 8.2: served at a well-known URI to anyone), so
 * a prompt in it leaks how the agent is steered and invites prompt injection. Like
 * credentials.ts, a pure scan of the card with the path of each finding; the policy engine's
 * `forbiddenContent` rule (operator/policy/) sets the length from which a block counts.
 *
 * A text block is instructions-like when it is longer than the stated length and uses at least
 * MIN_MARKERS distinct phrasings that address a model rather than describe a service ("you are",
 * "you must", "never reveal", "system prompt", a role tag such as "<system>"). A long, ordinary
 * description ("Finds recipes by ingredient ...") uses none of them; the length keeps a short
 * "You must authenticate first." from counting.
 */
import type { PathSegment } from './problem.ts';

/** Distinct markers a block needs: one imperative alone is ordinary documentation. */
export const MIN_MARKERS = 2;

/** Phrasings that address a language model; each counts once per block. */
const MARKERS: ReadonlyArray<{ name: string; pattern: RegExp }> = [
  { name: 'you are', pattern: /\byou\s+are\s+(an?|the)\b/i },
  { name: 'you must', pattern: /\byou\s+must\b/i },
  { name: 'you should', pattern: /\byou\s+should\b/i },
  { name: 'you will', pattern: /\byou\s+will\b/i },
  { name: 'do not', pattern: /\b(do\s+not|don't)\s+(reveal|disclose|mention|tell|share|answer|respond)\b/i },
  { name: 'never', pattern: /\bnever\s+(reveal|disclose|mention|tell|share|say|admit)\b/i },
  { name: 'always', pattern: /\balways\s+(respond|answer|reply|refuse)\b/i },
  { name: 'ignore', pattern: /\bignore\s+(all\s+)?(previous|prior|above)\b/i },
  { name: 'system prompt', pattern: /\bsystem\s+prompt\b/i },
  { name: 'instructions', pattern: /\b(your|these|the\s+following)\s+instructions\b/i },
  { name: 'your role', pattern: /\byour\s+(role|persona|task)\s+is\b/i },
  {
    name: 'role tag',
    pattern: /<\/?(system|assistant|instructions?)>|\[\/?INST\]|^#{1,3}\s*(system|instructions)\b/im,
  },
];

export interface InstructionsFinding {
  path: PathSegment[];
  /** Length of the block in characters (code points). */
  length: number;
  /** The markers found, by name (never the text itself: it may be a private prompt). */
  markers: string[];
}

/** The markers of one text block. */
export function instructionMarkers(text: string): string[] {
  return MARKERS.filter((m) => m.pattern.test(text)).map((m) => m.name);
}

/** Whether one text block is instructions-like at `minLength` (longer than it, enough markers). */
export function isInstructionsLike(text: string, minLength: number): boolean {
  return [...text].length > minLength && instructionMarkers(text).length >= MIN_MARKERS;
}

/** The texts of a card the scan reads: the card's and the skills' descriptions, skill examples. */
function* texts(card: Record<string, unknown>): Generator<{ path: PathSegment[]; text: string }> {
  if (typeof card.description === 'string') yield { path: ['description'], text: card.description };
  const skills = Array.isArray(card.skills) ? card.skills : [];
  for (const [i, skill] of skills.entries()) {
    if (!skill || typeof skill !== 'object') continue;
    const s = skill as Record<string, unknown>;
    if (typeof s.description === 'string') yield { path: ['skills', i, 'description'], text: s.description };
    const examples = Array.isArray(s.examples) ? s.examples : [];
    for (const [j, example] of examples.entries())
      if (typeof example === 'string') yield { path: ['skills', i, 'examples', j], text: example };
  }
  const capabilities = card.capabilities as Record<string, unknown> | undefined;
  const extensions = Array.isArray(capabilities?.extensions) ? capabilities.extensions : [];
  for (const [i, ext] of extensions.entries()) {
    const d = (ext as Record<string, unknown> | null)?.description;
    if (typeof d === 'string') yield { path: ['capabilities', 'extensions', i, 'description'], text: d };
  }
}

/** Every instructions-like block of a card longer than `minLength` characters. */
export function findInstructions(card: Record<string, unknown>, minLength: number): InstructionsFinding[] {
  const out: InstructionsFinding[] = [];
  for (const { path, text } of texts(card)) {
    const length = [...text].length;
    if (length <= minLength) continue;
    const markers = instructionMarkers(text);
    if (markers.length >= MIN_MARKERS) out.push({ path, length, markers });
  }
  return out;
}
