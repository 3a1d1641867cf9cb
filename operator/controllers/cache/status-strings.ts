/**
 * One copy of each of the status strings that thousands of AgentCards repeat word for word.
 *
 * A watch event is parsed with JSON.parse, which makes a new string for every string value: each
 * cached AgentCard held its own "True", "Ready", "AllReachable", "JSONRPC", "1.0", "3/3
 * reachable" and "JSON-RPC A2A 1.0: TaskNotFound (-32001) as expected". The trim of the AgentCard
 * cache replaces them with one shared copy: for a card with five conditions and three probed
 * interfaces, 1.94 KiB of heap instead of 2.54 (about 6 MiB at 10,000 cards; docs/scaling.md,
 * "Where the memory goes"). Shared are the condition types, statuses, reasons and messages and
 * the interfaces' bindings, versions, reasons and messages, and (a table of their own) the
 * conditions' times; not URLs or probe times, which repeat little. Messages can be unique (a
 * ConfigMap's name, an error's detail), so the table has a fixed size and starts over when full:
 * the repeated values come back at once, and what the table holds stays bounded whatever the
 * messages say.
 */
/** Distinct strings the table holds at most; a full table is emptied and fills again. */
export const MAX_SHARED_STRINGS = 4_096;

/** A table of shared strings, of a fixed maximum size. */
export class StringTable {
  readonly #strings = new Map<string, string>();
  readonly #max: number;

  constructor(max = MAX_SHARED_STRINGS) {
    this.#max = max;
  }

  /** The table's copy of `value`, or `value` itself, which becomes the table's copy. */
  share(value: string): string {
    const shared = this.#strings.get(value);
    if (shared !== undefined) return shared;
    if (this.#strings.size >= this.#max) this.#strings.clear();
    this.#strings.set(value, value);
    return value;
  }

  get size(): number {
    return this.#strings.size;
  }
}

const CONDITION_FIELDS = ['type', 'status', 'reason', 'message'] as const;
const INTERFACE_FIELDS = ['protocolBinding', 'protocolVersion', 'reason', 'message'] as const;

/** Shares the string values of `fields` of each object of `list` (in place; others untouched). */
function shareFields(list: unknown, fields: readonly string[], table: StringTable): void {
  if (!Array.isArray(list)) return;
  for (const item of list as unknown[]) {
    if (!item || typeof item !== 'object') continue;
    const record = item as Record<string, unknown>;
    for (const f of fields) {
      const value = record[f];
      if (typeof value === 'string') record[f] = table.share(value);
    }
  }
}

const CONDITION_TIMES = ['lastTransitionTime'] as const;

/**
 * Replaces the repeated strings of an AgentCard's status by the table's copies (in place). With
 * `times`, the conditions' lastTransitionTime too, from that table: they are whole seconds, and
 * the cards a controller reconciled in the same second share them (10,000 cards created in a
 * minute or two: a few hundred distinct times for 50,000 conditions). They have a table of their
 * own, so that their turnover never empties the vocabulary's.
 */
export function shareStatusStrings(
  card: { status?: unknown },
  table: StringTable,
  times?: StringTable,
): void {
  const status = card.status as { conditions?: unknown; interfaces?: unknown } | undefined;
  if (!status || typeof status !== 'object') return;
  shareFields(status.conditions, CONDITION_FIELDS, table);
  shareFields(status.interfaces, INTERFACE_FIELDS, table);
  if (times) shareFields(status.conditions, CONDITION_TIMES, times);
}

/**
 * Gives each probed interface of the status the spec's copy of its URL (in place): the status
 * repeats the URLs of spec.card.supportedInterfaces, and a watch event parses both (3 URLs a card,
 * about 1.3 MiB at 10,000 cards). A URL the spec does not have is left as it is.
 */
export function shareInterfaceUrls(card: { spec?: unknown; status?: unknown }): void {
  const declared = (card.spec as { card?: { supportedInterfaces?: unknown } } | undefined)?.card
    ?.supportedInterfaces;
  const probed = (card.status as { interfaces?: unknown } | undefined)?.interfaces;
  if (!Array.isArray(declared) || !Array.isArray(probed)) return;
  for (const item of probed as unknown[]) {
    if (!item || typeof item !== 'object') continue;
    const record = item as Record<string, unknown>;
    if (typeof record.url !== 'string') continue;
    for (const d of declared as unknown[]) {
      const url = (d as { url?: unknown } | null)?.url;
      if (url === record.url) {
        record.url = url;
        break;
      }
    }
  }
}
