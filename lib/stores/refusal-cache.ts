import type { SpendRequest, SpendResult, StackResult } from './store.interface';

/** Options of the refusal cache ({@link RedisStoreOptions.refusalCache}). */
export interface RefusalCacheOptions {
  /**
   * Most refusals remembered; past it, the one refused longest ago is forgotten first.
   * Default 10 000.
   */
  readonly maxKeys?: number;
}

const OPTIONS: ReadonlySet<string> = new Set(['maxKeys']);

interface Entry {
  /** The answer, with `cached` set. */
  readonly answer: SpendResult | StackResult;
  /** When the refusal was issued, on the cache's clock. */
  readonly issuedAt: number;
  /** Until when it stands, on the cache's clock. */
  readonly until: number;
  /** The `policy\0key` pairs it names (to forget it on a refund or reset of any of them). */
  readonly pairs: readonly string[];
}

/**
 * Refusals remembered in this process: a consume refused with a wait (out of budget, or locked
 * out) is answered again, without a round trip, for the same policy, keys and cost until that wait
 * has passed. It only ever refuses, never admits; allowed decisions, failures and peeks are never
 * remembered. A wait counts from when the refused call was issued (before Redis decided it), so a
 * remembered refusal ends no later than Redis's own. A refund or reset through the same store
 * forgets the refusals naming its keys at once; one made by another process is not seen (such a
 * caller waits out the refusal it was given). Bounded by `maxKeys`, least recently refused
 * forgotten first; no timer per entry.
 */
export class RefusalCache {
  private readonly entries = new Map<string, Entry>();
  /** `policy\0key` → the entries that name it. */
  private readonly byPair = new Map<string, Set<string>>();
  private readonly maxKeys: number;

  /**
   * @param clock the store's clock (ms): a custom clock, or a monotonic one
   * @throws TypeError / RangeError naming a bad option
   */
  constructor(
    options: true | RefusalCacheOptions,
    private readonly clock: () => number,
  ) {
    const given = options === true ? {} : options;
    if (given === null || typeof given !== 'object') {
      throw new TypeError('RedisStore options.refusalCache must be true or { maxKeys }');
    }
    for (const name of Object.keys(given)) {
      if (!OPTIONS.has(name)) {
        throw new TypeError(
          `RedisStore options.refusalCache.${name} is not an option (known: ${[...OPTIONS].join(', ')})`,
        );
      }
    }
    const maxKeys = given.maxKeys ?? 10_000;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new RangeError(
        `RedisStore options.refusalCache.maxKeys must be a whole number of at least 1; got ${String(maxKeys)}`,
      );
    }
    this.maxKeys = maxKeys;
  }

  /** The instant to issue a call at, for {@link remember}. */
  now(): number {
    return this.clock();
  }

  /** Number of refusals remembered (expired ones included until they are looked up). */
  get size(): number {
    return this.entries.size;
  }

  /** A remembered refusal of this consume, its waits counted down to now, or undefined. */
  consume(request: SpendRequest): SpendResult | undefined {
    return this.lookup(signature([request])) as SpendResult | undefined;
  }

  /** A remembered refusal of this stack, its waits counted down to now, or undefined. */
  consumeStack(requests: readonly SpendRequest[]): StackResult | undefined {
    return this.lookup(signature(requests)) as StackResult | undefined;
  }

  /** Remembers a consume's refusal (issued at `issuedAt`) if it came with a wait. */
  rememberConsume(request: SpendRequest, result: SpendResult, issuedAt: number): void {
    if (result.allowed || result.retryAfterMs <= 0) return;
    this.remember(
      signature([request]),
      [request],
      { ...result, cached: true },
      issuedAt,
      result.retryAfterMs,
    );
  }

  /** Remembers a stack's refusal (issued at `issuedAt`) if it came with a wait. */
  rememberStack(requests: readonly SpendRequest[], result: StackResult, issuedAt: number): void {
    const refusing = result.results[result.refusingIndex];
    if (result.allowed || refusing === undefined || refusing.retryAfterMs <= 0) return;
    const answer: StackResult = {
      ...result,
      results: result.results.map((r) => ({ ...r, cached: true as const })),
    };
    this.remember(signature(requests), requests, answer, issuedAt, refusing.retryAfterMs);
  }

  /** Forgets every refusal naming one of these keys under this policy (a refund or reset). */
  forget(policy: string, keys: readonly string[]): void {
    for (const key of keys) {
      const names = this.byPair.get(pair(policy, key));
      if (names === undefined) continue;
      for (const name of [...names]) this.drop(name);
    }
  }

  private remember(
    name: string,
    requests: readonly SpendRequest[],
    answer: SpendResult | StackResult,
    issuedAt: number,
    waitMs: number,
  ): void {
    this.drop(name);
    const pairs = requests.flatMap((r) => r.keys.map((key) => pair(r.policy, key)));
    this.entries.set(name, { answer, issuedAt, until: issuedAt + waitMs, pairs });
    for (const p of pairs) {
      let names = this.byPair.get(p);
      if (names === undefined) this.byPair.set(p, (names = new Set()));
      names.add(name);
    }
    if (this.entries.size > this.maxKeys) this.drop(this.entries.keys().next().value!);
  }

  private lookup(name: string): SpendResult | StackResult | undefined {
    const entry = this.entries.get(name);
    if (entry === undefined) return undefined;
    const now = this.clock();
    if (now >= entry.until) {
      this.drop(name);
      return undefined;
    }
    // Refused again: the most recently refused entries are forgotten last.
    this.entries.delete(name);
    this.entries.set(name, entry);
    const elapsed = Math.max(0, now - entry.issuedAt);
    const { answer } = entry;
    if ('results' in answer) {
      return { ...answer, results: answer.results.map((r) => countedDown(r, elapsed)) };
    }
    return countedDown(answer, elapsed);
  }

  private drop(name: string): void {
    const entry = this.entries.get(name);
    if (entry === undefined) return;
    this.entries.delete(name);
    for (const p of entry.pairs) {
      const names = this.byPair.get(p);
      names?.delete(name);
      if (names?.size === 0) this.byPair.delete(p);
    }
  }
}

/** A remembered answer `elapsed` ms later: waits shorter by that much, the instant later. */
function countedDown(result: SpendResult, elapsed: number): SpendResult {
  return {
    ...result,
    retryAfterMs: result.retryAfterMs > 0 ? Math.max(1, result.retryAfterMs - elapsed) : 0,
    resetAfterMs: Math.max(0, result.resetAfterMs - elapsed),
    at: result.at + elapsed,
  };
}

function pair(policy: string, key: string): string {
  return `${policy}\u0000${key}`;
}

/** What makes two calls the same: each part's policy, keys (in order) and cost. */
function signature(requests: readonly SpendRequest[]): string {
  let text = '';
  for (const { policy, keys, cost } of requests)
    text += `${policy} ${cost} ${JSON.stringify(keys)}\n`;
  return text;
}
