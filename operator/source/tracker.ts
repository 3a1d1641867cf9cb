/**
 * What an adopted AgentCard (spec.source) publishes now, and when its source is fetched again.
 * The controller asks once per reconcile (resolve); the tracker fetches only when a fetch is due
 * and otherwise answers from memory, so reconciles triggered by anything else cost no request.
 *
 * Re-fetch policy (docs/adopt.md):
 * - the source is fetched at the first reconcile, whenever spec.source changes, and then every
 *   spec.source.interval (default 5m, at least 10s), driven by the work queue's requeue-after;
 * - a changed card is adopted only when the next fetch, CONFIRM_MS (or the interval, if
 *   shorter) later, returns the same bytes again (debounce): a source that flips between two
 *   versions is adopted at most once per interval plus confirmation, never at its own pace;
 * - a fetch that fails, a card that fails validation (when the last good one passes it), or a
 *   signature that spec.source.verification requires and that does not verify, keeps the last
 *   good card: it stays published, and SourceAvailable=False says why;
 * - the tracker's memory is not persisted; the published ConfigMap and status.source are. After
 *   a restart (or a leader change) whose first fetch fails, the card last published (its
 *   ConfigMap, with status.source) is the last good card: it is published unchanged (the
 *   controller finds its bytes up to date and writes nothing), Accepted keeps its value, and
 *   SourceAvailable=False says why (restore.ts). The first successful fetch then adopts at once.
 *
 * Time comes from the injected clock (monotonic milliseconds), so the policy is tested without
 * sleeping; status times are the wall-clock `now` of the reconcile.
 */
import type { Clock } from '../kube/clock.ts';
import { problemsFromZod, type Problem } from '../card/problem.ts';
import {
  AgentCardResourceSpecSchema,
  parseDuration,
  type Source,
  type SourceStatus,
} from '../card/resource.ts';
import type { JWK } from '../card/sign.ts';
import { validateSpec } from '../card/validate.ts';
import { verifyCard } from '../card/verify.ts';
import { canonicalJson } from '../card/jcs.ts';
import type { ConvertedCard } from './convert.ts';
import type { SourceAvailableReason } from '../api/reasons.ts';
import {
  RevalidatingCache,
  SOURCE_REASONS,
  sourceUrls,
  type SourceFailureReason,
  type SourceResult,
} from './fetch.ts';
import { adoptedCard, effectiveSpec, type AdoptedSpecInput } from './overlay.ts';
import type { DocumentCache } from '../discover/cache.ts';
import { restoredAdoption, type Adopted, type PublishedSource } from './restore.ts';

/** Delay of the fetch that confirms a changed card (the interval, when that is shorter). */
export const CONFIRM_MS = 10_000;

/**
 * Until a first card is adopted, a failed fetch is retried after 10 s, doubling up to the
 * interval: an AgentCard is usually applied with its agent, before the agent's Pod is Ready, and
 * waiting a whole interval (5 minutes by default) for the first card would leave nothing
 * published that long. Once a card is adopted (or restored after a restart) the interval rules.
 */
export const FIRST_ADOPTION_RETRY_MS = 10_000;

export function firstAdoptionRetryMs(failures: number, intervalMs: number): number {
  return Math.min(intervalMs, FIRST_ADOPTION_RETRY_MS * 2 ** Math.max(0, Math.min(failures - 1, 20)));
}

type Json = Record<string, unknown>;
type SignatureStatus = NonNullable<SourceStatus['signature']>;

export interface SourceDeps {
  /** Fetches the first answering URL (fetch.ts's fetchSourceCard under the operator's policy). */
  fetch: (
    urls: string[],
    ctx: { namespace: string; cache: DocumentCache; signal: AbortSignal },
  ) => Promise<SourceResult>;
  /** The number of a named port of a Service of the namespace (undefined: no such port). */
  servicePort: (
    namespace: string,
    service: string,
    port: string,
    signal: AbortSignal,
  ) => Promise<number | undefined>;
  clock: Clock;
}

export interface SourceEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  message: string;
}

export interface SourceOutcome {
  /** The spec to validate and publish (spec.card replaced by the adopted card); none yet. */
  spec?: Json;
  /** The spec itself is invalid: why (Accepted=False, nothing fetched). */
  invalid?: Problem[];
  condition: { status: 'True' | 'False' | 'Unknown'; reason: SourceAvailableReason; message: string };
  status?: SourceStatus;
  /** When the controller should reconcile again for the next fetch. */
  requeueAfterMs?: number;
  events: SourceEvent[];
  /** Whether this reconcile fetched (for logs and tests). */
  fetched: boolean;
}

interface Memory {
  sourceKey: string;
  cache: RevalidatingCache;
  lastFetchAt?: number;
  adopted?: Adopted;
  /** A changed card seen once, with what its adoption would record. */
  pending?: Omit<Adopted, 'changes' | 'changeTime'>;
  failure?: { reason: SourceFailureReason; message: string; url: string };
  /** Failed fetches in a row while nothing is adopted yet (the first-adoption backoff). */
  failuresBeforeAdoption?: number;
}

/** The source card's own signatures against spec.source.verification (A2A spec section 8.4.3). */
export async function checkSignature(
  served: Json,
  verification: Source['verification'],
): Promise<SignatureStatus> {
  const signatures = served.signatures;
  if (!Array.isArray(signatures) || signatures.length === 0) return { result: 'Unsigned' };
  if (!verification) return { result: 'NotChecked' };
  const result = await verifyCard(served, { keys: verification.keys as unknown as JWK[] });
  if (result.verified) return { result: 'Verified', ...(result.kid ? { kid: result.kid } : {}) };
  const why = result.results.map((r) => `${r.kid ? `kid ${r.kid}: ` : ''}${r.error ?? 'invalid'}`).join('; ');
  return { result: 'Invalid', message: why.slice(0, 1024) };
}

const short = (digest: string) => digest.slice(0, 19);

function shapeNote(converted: ConvertedCard): string {
  return converted.protocolVersion === '0.3' ? 'an A2A 0.3 card, converted to 1.0' : 'an A2A 1.0 card';
}

function signatureNote(s: SignatureStatus): string {
  switch (s.result) {
    case 'Verified':
      return `; its signature verifies${s.kid ? ` (kid ${s.kid})` : ''}`;
    case 'Invalid':
      return `; its signature does not verify (${s.message ?? 'invalid'})`;
    case 'Unsigned':
      return '';
    default:
      return '; it is signed, not verified (no spec.source.verification keys)';
  }
}

/** The card an adoption publishes: the source's card with spec.remove and spec.card applied. */
function merged(
  adopted: Pick<Adopted, 'converted' | 'restored'>,
  spec: Json,
): { card: Json; unmatched: string[] } {
  if (adopted.restored) return { card: adopted.converted.card, unmatched: [] };
  return adoptedCard(adopted.converted.card, spec as AdoptedSpecInput);
}

export class SourceTracker {
  readonly #deps: SourceDeps;
  readonly #memory = new Map<string, Memory>();

  constructor(deps: SourceDeps) {
    this.#deps = deps;
  }

  forget(key: string): void {
    this.#memory.delete(key);
  }

  /** Whether the last good card is valid with the current spec (spec.remove and spec.card). */
  #valid(rawSpec: Json, adopted: Pick<Adopted, 'converted' | 'restored'>): boolean {
    return validateSpec(effectiveSpec(rawSpec, merged(adopted, rawSpec).card)).spec !== undefined;
  }

  /**
   * The outcome for one AgentCard; `undefined` when it has no spec.source (a written card).
   * `now` is the reconcile's wall-clock time (for status), the deps' clock drives the schedule.
   */
  async resolve(
    key: string,
    ref: {
      namespace: string;
      spec: unknown;
      /** The card last published and status.source (restore.ts), read only when needed. */
      published?: () => PublishedSource | undefined;
    },
    now: Date,
    signal: AbortSignal,
  ): Promise<SourceOutcome | undefined> {
    const rawSpec = ref.spec;
    if (!rawSpec || typeof rawSpec !== 'object' || !('source' in rawSpec)) {
      this.#memory.delete(key);
      return undefined;
    }
    const parsed = AgentCardResourceSpecSchema.safeParse(rawSpec);
    if (!parsed.success) {
      return {
        invalid: problemsFromZod(parsed.error, ['spec']),
        condition: { status: 'Unknown', reason: 'SpecNotAccepted', message: 'waiting for a valid spec' },
        events: [],
        fetched: false,
      };
    }
    const spec = rawSpec as Json;
    const source = parsed.data.source!;
    const intervalMs = parseDuration(source.interval);
    const confirmMs = Math.min(CONFIRM_MS, intervalMs);
    const sourceKey = canonicalJson(source);
    let memory = this.#memory.get(key);
    if (!memory || memory.sourceKey !== sourceKey) {
      // A new source (or another one): fetch now; the last good card stays until it answers.
      memory = { sourceKey, cache: new RevalidatingCache(), adopted: memory?.adopted };
      this.#memory.set(key, memory);
    }
    const events: SourceEvent[] = [];
    const clockNow = this.#deps.clock.now();
    const wait = () =>
      memory.pending
        ? confirmMs
        : !memory.adopted && memory.failure
          ? firstAdoptionRetryMs(memory.failuresBeforeAdoption ?? 1, intervalMs)
          : intervalMs;
    const due = memory.lastFetchAt === undefined || clockNow - memory.lastFetchAt >= wait();
    if (due) {
      memory.lastFetchAt = clockNow;
      await this.#fetch(memory, ref.namespace, source, spec, now, signal, events);
      // Nothing adopted by this process and the source fails: the published card is the last
      // good one (after a restart).
      if (!memory.adopted && memory.failure) memory.adopted = restoredAdoption(ref.published?.());
      memory.failuresBeforeAdoption =
        !memory.adopted && memory.failure ? (memory.failuresBeforeAdoption ?? 0) + 1 : undefined;
    }
    const next = Math.max(1_000, memory.lastFetchAt! + wait() - clockNow);
    return { ...this.#outcome(memory, spec), requeueAfterMs: next, events, fetched: due };
  }

  async #fetch(
    memory: Memory,
    namespace: string,
    source: Source,
    spec: Json,
    now: Date,
    signal: AbortSignal,
    events: SourceEvent[],
  ): Promise<void> {
    let port: number | undefined;
    if (source.service && typeof source.service.port === 'string') {
      port = await this.#deps.servicePort(namespace, source.service.name, source.service.port, signal);
      if (port === undefined) {
        memory.pending = undefined;
        memory.failure = {
          reason: SOURCE_REASONS.port,
          url: `service ${namespace}/${source.service.name}`,
          message: `Service ${namespace}/${source.service.name} has no port named "${source.service.port}" (or does not exist)`,
        };
        return;
      }
    }
    const result = await this.#deps.fetch(sourceUrls(source, namespace, port), {
      namespace,
      cache: memory.cache,
      signal,
    });
    if (!result.ok) {
      memory.pending = undefined;
      memory.failure = { reason: result.reason, message: result.message, url: result.url };
      return;
    }
    const signature = await checkSignature(result.served, source.verification);
    if (source.verification?.required && signature.result !== 'Verified') {
      memory.pending = undefined;
      memory.failure = {
        reason: SOURCE_REASONS.signature,
        url: result.url,
        message: `spec.source.verification.required is set and the card ${signature.result === 'Unsigned' ? 'is not signed' : `has no signature valid under its keys (${signature.message ?? ''})`}`,
      };
      return;
    }
    const adopted = memory.adopted;
    const candidate = {
      converted: result.converted,
      digest: result.digest,
      url: result.url,
      fetchTime: now.toISOString(),
      signature,
    };
    if (adopted && adopted.digest === result.digest && adopted.url === result.url) {
      memory.pending = undefined;
      memory.failure = undefined;
      // The restored card is the one the agent serves: from now on, the agent's own.
      if (adopted.restored) memory.adopted = { ...adopted, converted: result.converted, restored: undefined };
      return;
    }
    if (adopted && !this.#valid(spec, candidate) && this.#valid(spec, adopted)) {
      // The agent's new card is what is wrong: keep the last good one.
      const problems = validateSpec(
        effectiveSpec(spec, adoptedCard(result.converted.card, spec as AdoptedSpecInput).card),
      ).problems.filter((p) => p.severity === 'error');
      memory.pending = undefined;
      memory.failure = {
        reason: SOURCE_REASONS.invalid,
        url: result.url,
        message: `the card fails validation: ${problems
          .slice(0, 3)
          .map((p) => `${p.path.replace(/^spec\.card/, 'card')}: ${p.message}`)
          .join('; ')}${problems.length > 3 ? ` (and ${problems.length - 3} more)` : ''}`,
      };
      return;
    }
    memory.failure = undefined;
    if (!adopted) {
      memory.pending = undefined;
      memory.adopted = { ...candidate, changes: 0 };
      return;
    }
    // A restored card is not this process's own adoption: the first fetch that answers adopts at
    // once, as without one (no confirmation), counted as a change since it differs.
    if (memory.pending?.digest !== result.digest && !adopted.restored) {
      memory.pending = candidate; // seen once: confirmed (or not) by the next fetch
      return;
    }
    memory.pending = undefined;
    memory.adopted = { ...candidate, changes: adopted.changes + 1, changeTime: now.toISOString() };
    events.push({
      type: 'Normal',
      reason: 'SourceChanged',
      action: 'Adopt',
      message: `the card at ${result.url} changed (${short(adopted.digest)} to ${short(result.digest)}); publishing it`,
    });
  }

  #outcome(memory: Memory, spec: Json): Omit<SourceOutcome, 'requeueAfterMs' | 'events' | 'fetched'> {
    const adopted = memory.adopted;
    const status: SourceStatus | undefined = adopted && {
      url: adopted.url,
      digest: adopted.digest,
      protocolVersion: adopted.converted.protocolVersion,
      fetchTime: adopted.fetchTime,
      ...(adopted.changeTime ? { changeTime: adopted.changeTime } : {}),
      ...(adopted.changes > 0 ? { changes: adopted.changes } : {}),
      signature: adopted.signature,
    };
    const published = adopted ? effectiveSpec(spec, merged(adopted, spec).card) : undefined;
    const unmatched = adopted ? merged(adopted, spec).unmatched : [];
    const unmatchedNote = unmatched.length
      ? `; spec.remove ${unmatched.map((p) => `"${p}"`).join(', ')} matched nothing`
      : '';
    if (memory.failure) {
      const kept = adopted
        ? adopted.restored
          ? `the card last published (from ${short(adopted.digest)}) stays in use`
          : `the last good card (${short(adopted.digest)}) stays in use`
        : 'no card was adopted yet';
      return {
        ...(published ? { spec: published } : {}),
        ...(status ? { status } : {}),
        condition: {
          status: 'False',
          reason: memory.failure.reason,
          message: `${memory.failure.url}: ${memory.failure.message}; ${kept}`,
        },
      };
    }
    if (!adopted) {
      return {
        condition: { status: 'Unknown', reason: 'Fetching', message: 'the source is not fetched yet' },
      };
    }
    return {
      spec: published,
      status,
      condition: {
        status: 'True',
        reason: 'Adopted',
        message: `${adopted.url} serves ${shapeNote(adopted.converted)} (${short(adopted.digest)})${signatureNote(adopted.signature)}${unmatchedNote}`,
      },
    };
  }
}
