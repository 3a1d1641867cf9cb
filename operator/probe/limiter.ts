/**
 * Concurrency limits for probes: at most `global` in flight overall and `perHost` per host, so
 * that neither the operator nor any one agent host is flooded. Hosts with room take turns
 * (round robin); each host's waiters are served in FIFO order. Every operation is O(1).
 */
export class ProbeLimiter {
  readonly global: number;
  readonly perHost: number;
  #active = 0;
  #waiting = 0;
  #busy = new Map<string, number>();
  #queues = new Map<string, (() => void)[]>();
  /** Hosts that have waiters and room, in turn order (a Set keeps insertion order). */
  #ready = new Set<string>();

  constructor(opts: { global: number; perHost: number }) {
    if (!(opts.global >= 1) || !(opts.perHost >= 1)) throw new Error('concurrency limits must be at least 1');
    this.global = opts.global;
    this.perHost = opts.perHost;
  }

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#waiting;
  }

  /** Runs `task` once both limits have room for `host`. */
  async run<T>(host: string, task: () => Promise<T>): Promise<T> {
    await new Promise<void>((start) => {
      const queue = this.#queues.get(host) ?? [];
      queue.push(start);
      this.#queues.set(host, queue);
      this.#waiting++;
      if ((this.#busy.get(host) ?? 0) < this.perHost) this.#ready.add(host);
      this.#drain();
    });
    try {
      return await task();
    } finally {
      this.#active--;
      const busy = this.#busy.get(host)! - 1;
      if (busy === 0) this.#busy.delete(host);
      else this.#busy.set(host, busy);
      if (this.#queues.has(host)) this.#ready.add(host);
      this.#drain();
    }
  }

  #drain(): void {
    while (this.#active < this.global && this.#ready.size > 0) {
      const host = this.#ready.values().next().value!;
      this.#ready.delete(host);
      const queue = this.#queues.get(host)!;
      const start = queue.shift()!;
      if (queue.length === 0) this.#queues.delete(host);
      const busy = (this.#busy.get(host) ?? 0) + 1;
      this.#busy.set(host, busy);
      this.#active++;
      this.#waiting--;
      // Back of the line, if it still has waiters and room.
      if (queue.length > 0 && busy < this.perHost) this.#ready.add(host);
      start();
    }
  }
}

/** The host part of an interface URL (or bare host:port) that the per-host limit counts by. */
export function hostKey(url: string): string {
  try {
    return new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `http://${url}`).hostname.toLowerCase();
  } catch {
    return url;
  }
}
