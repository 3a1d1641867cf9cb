/**
 * When a catalog may be rebuilt again: the rest after each rebuild, in proportion to the time the
 * operator spent deciding it.
 *
 * A rebuild starts once BUILD_SHARE times the work of the catalog's last rebuild has passed since
 * that rebuild ended (checked when the rebuild is about to start, so events that arrive during a
 * rebuild wait too). A catalog's rebuilds thus take at most 1 / (1 + BUILD_SHARE), a third, of the
 * process's time however many cards change, and the AgentCard reconciles keep going.
 *
 * The work counted is the decision (reading what the catalog lists, building, signing), not the
 * writes that publish it: those wait on the API server and leave the process free. Counting them
 * made a slow write hold the next change back by twice its time, with no work of the operator's
 * to protect; at 10,000 entries an incremental rebuild decided in about 45 ms and wrote for about
 * 65 ms (its partition, the root and its status), which put a 220 ms rest after every single
 * change instead of 90 ms (docs/catalogs.md, "When a rebuild starts").
 */

/** The rest after a rebuild, as a multiple of that rebuild's work. */
export const BUILD_SHARE = 2;

export class RebuildPacer {
  /** Each catalog's last rebuild: its work (ms) and when it ended (the clock's ms). */
  readonly #last = new Map<string, { workMs: number; endedAt: number }>();

  /** Records a rebuild that ended at `endedAt` after `workMs` of the operator's work. */
  rebuilt(key: string, workMs: number, endedAt: number): void {
    this.#last.set(key, { workMs: Math.max(0, workMs), endedAt });
  }

  /** How long the catalog still rests at `now`; 0: it may be rebuilt. */
  restLeft(key: string, now: number): number {
    const last = this.#last.get(key);
    return last ? Math.max(0, last.endedAt + BUILD_SHARE * last.workMs - now) : 0;
  }

  /** The catalog is gone: no rest for a catalog of the same name created later. */
  forget(key: string): void {
    this.#last.delete(key);
  }
}
