import { checkOptions } from '../core/options.util';
import type { BlockRule, LimitRule } from '../core/policy';
import type { SpendRequest, SpendResult, StackResult } from './store.interface';

/** When a call was issued, for the refusal cache ({@link RefusalCache.issue}). */
export interface Issued {
  /** The cache's clock reading. */
  readonly at: number;
  /** Refunds and resets the cache had seen. */
  readonly forgets: number;
}

/** Options of the refusal cache ({@link RedisStoreOptions.refusalCache}). */
export interface RefusalCacheOptions {
  /**
   * Most refusals remembered; past it, the one refused longest ago is forgotten first.
   * Default 10 000.
   */
  readonly maxKeys?: number;
  /**
   * The longest a refusal is answered from memory before Redis is asked again (and it is
   * remembered anew if it still stands), in ms: the bound on how long a reset or refund made by
   * another process (a support unlock, `redlimit reset`) goes unseen here. Default 1 000.
   */
  readonly maxAgeMs?: number;
}

const OPTIONS: readonly (keyof RefusalCacheOptions)[] = ['maxKeys', 'maxAgeMs'];

interface Entry {
  /** The answer, with `cached` set. */
  readonly answer: SpendResult | StackResult;
  /** When the refusal was issued, on the cache's clock. */
  readonly issuedAt: number;
  /** Until when it stands, on the cache's clock. */
  readonly until: number;
  /** The `policy\0key` pairs it names (to forget it on a refund or reset of any of them). */
  readonly pairs: readonly string[];
  /** The cache's write count when it was last placed at the end (see lookup). */
  readonly written: number;
  /** A single-key consume's policy identity, cost and key (its place in the `single` index). */
  readonly single?: readonly [identity: string, cost: number, key: string];
}

/**
 * Refusals remembered in this process: a consume refused with a wait (out of budget, or locked
 * out) is answered again, without a round trip, for the same policy, keys and cost until that wait
 * has passed. The same policy is the same name and definition (algorithm, limits, lockout): two
 * limiters that share a name but not their limits never answer each other's calls. It only ever refuses, never admits; allowed decisions, failures and peeks are never
 * remembered. A wait counts from when the refused call was issued (before Redis decided it), so a
 * remembered refusal ends no later than Redis's own. A refund or reset through the same store
 * forgets the refusals naming its keys at once; one made by another process is seen within
 * `maxAgeMs` (a refusal is answered from memory at most that long before Redis is asked again). Bounded by `maxKeys`, least recently refused
 * forgotten first (a hit counts as a refusal once half the bound was written since it last did);
 * no timer per entry.
 */
export class RefusalCache {
  private readonly entries = new Map<string, Entry>();
  /** `policy\0key` → the entries that name it. */
  private readonly byPair = new Map<string, Set<string>>();
  /** Single-key consumes: policy identity → cost → caller key → entry name. */
  private readonly single = new Map<string, Map<number, Map<string, string>>>();
  private readonly maxKeys: number;
  private readonly maxAgeMs: number;
  /** Entries placed at the end of `entries` so far. */
  private written = 0;
  /** Refunds and resets seen so far (see {@link issue}). */
  private forgets = 0;

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
      throw new TypeError(
        'RedisStore options.refusalCache must be true or { maxKeys?, maxAgeMs? }',
      );
    }
    checkOptions(given, OPTIONS, 'RedisStore options.refusalCache');
    const maxKeys = given.maxKeys ?? 10_000;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new RangeError(
        `RedisStore options.refusalCache.maxKeys must be a whole number of at least 1; got ${String(maxKeys)}`,
      );
    }
    this.maxKeys = maxKeys;
    const maxAgeMs = given.maxAgeMs ?? 1_000;
    if (!Number.isSafeInteger(maxAgeMs) || maxAgeMs < 1) {
      throw new RangeError(
        `RedisStore options.refusalCache.maxAgeMs must be a whole number of ms of at least 1; got ${String(maxAgeMs)}`,
      );
    }
    this.maxAgeMs = maxAgeMs;
  }

  /**
   * Marks a consume or stack as issued now, for {@link rememberConsume} / {@link rememberStack}:
   * its instant, and how many refunds and resets this cache had seen (one issued meanwhile voids
   * the refusal's answer, which may predate it).
   */
  issue(): Issued {
    return { at: this.clock(), forgets: this.forgets };
  }

  /** Number of refusals remembered (expired ones included until they are looked up). */
  get size(): number {
    return this.entries.size;
  }

  /** A remembered refusal of this consume, its waits counted down to now, or undefined. */
  consume(request: SpendRequest): SpendResult | undefined {
    if (request.keys.length === 1) {
      // The common case builds no string: policy identity → cost → key.
      const name = this.single
        .get(policyIdentity(request))
        ?.get(request.cost)
        ?.get(request.keys[0]!);
      return name === undefined ? undefined : (this.lookup(name) as SpendResult | undefined);
    }
    return this.lookup(consumeName(request)) as SpendResult | undefined;
  }

  /** A remembered refusal of this stack, its waits counted down to now, or undefined. */
  consumeStack(requests: readonly SpendRequest[]): StackResult | undefined {
    return this.lookup(stackName(requests)) as StackResult | undefined;
  }

  /**
   * Remembers a consume's refusal if it came with a wait, and no refund or reset was issued
   * through this store since the consume was (`issued`). Never a `concurrency` refusal: its wait
   * is an upper bound (a lease can be released, by another process, at any time).
   */
  rememberConsume(request: SpendRequest, result: SpendResult, issued: Issued): void {
    if (result.allowed || result.retryAfterMs <= 0 || issued.forgets !== this.forgets) return;
    if (request.algorithm === 'concurrency') return; // a release frees a lease before its wait ends
    this.remember(
      consumeName(request),
      [request],
      countedDown(result, 0), // a plain object of one shape (a spread is slow to read)
      issued.at,
      result.retryAfterMs,
    );
  }

  /** Remembers a stack's refusal, as {@link rememberConsume} does a consume's. */
  rememberStack(requests: readonly SpendRequest[], result: StackResult, issued: Issued): void {
    const refusing = result.results[result.refusingIndex];
    if (result.allowed || refusing === undefined || refusing.retryAfterMs <= 0) return;
    if (issued.forgets !== this.forgets) return;
    if (requests.some((r) => r.algorithm === 'concurrency')) return; // leases free before the wait
    const answer: StackResult = {
      allowed: false,
      refusingIndex: result.refusingIndex,
      results: result.results.map((r) => countedDown(r, 0)),
    };
    this.remember(stackName(requests), requests, answer, issued.at, refusing.retryAfterMs);
  }

  /**
   * Forgets every refusal naming one of these keys under this policy (a refund or reset), and
   * voids the answers of consumes issued before it that have not come back yet.
   */
  forget(policy: string, keys: readonly string[]): void {
    this.forgets += 1;
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
    const [first] = requests;
    const single =
      requests.length === 1 && first!.keys.length === 1 && !('results' in answer)
        ? ([policyIdentity(first!), first!.cost, first!.keys[0]!] as const)
        : undefined;
    if (single !== undefined) {
      let costs = this.single.get(single[0]);
      if (costs === undefined)
        this.single.set(single[0], (costs = new Map<number, Map<string, string>>()));
      let keys = costs.get(single[1]);
      if (keys === undefined) costs.set(single[1], (keys = new Map<string, string>()));
      keys.set(single[2], name);
    }
    this.entries.set(name, {
      single,
      answer,
      issuedAt,
      until: issuedAt + Math.min(waitMs, this.maxAgeMs),
      pairs,
      written: ++this.written,
    });
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
    // (a clock that stepped back before the refusal was issued: its wait can no longer be counted)
    if (now >= entry.until || now < entry.issuedAt) {
      this.drop(name);
      return undefined;
    }
    // Refused again: the most recently refused are forgotten last. Moving an entry to the end
    // costs a delete and a set, so one is moved only once half the bound has been written since.
    if (this.written - entry.written > this.maxKeys / 2) {
      this.entries.delete(name);
      this.entries.set(name, {
        single: entry.single,
        answer: entry.answer,
        issuedAt: entry.issuedAt,
        until: entry.until,
        pairs: entry.pairs,
        written: ++this.written,
      });
    }
    const elapsed = Math.max(0, now - entry.issuedAt);
    const { answer } = entry;
    if ('results' in answer) {
      return {
        allowed: answer.allowed,
        refusingIndex: answer.refusingIndex,
        results: answer.results.map((r) => countedDown(r, elapsed)),
      };
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
    if (entry.single !== undefined) {
      const [identity, cost, key] = entry.single;
      const costs = this.single.get(identity)!;
      const keys = costs.get(cost)!;
      keys.delete(key);
      if (keys.size === 0) costs.delete(cost);
      if (costs.size === 0) this.single.delete(identity);
    }
  }
}

/** A remembered answer `elapsed` ms later: waits shorter by that much, the instant later. */
function countedDown(result: SpendResult, elapsed: number): SpendResult {
  // Field by field (a spread of an object of this size costs more than the rest of a hit).
  const answer: { -readonly [K in keyof SpendResult]: SpendResult[K] } = {
    allowed: result.allowed,
    remaining: result.remaining,
    limitIndex: result.limitIndex,
    retryAfterMs: result.retryAfterMs > 0 ? Math.max(1, result.retryAfterMs - elapsed) : 0,
    resetAfterMs: Math.max(0, result.resetAfterMs - elapsed),
    blockedKeyIndex: result.blockedKeyIndex,
    at: result.at + elapsed,
    cached: true,
  };
  if (result.blockedUntil !== undefined) answer.blockedUntil = result.blockedUntil;
  if (result.atByKey !== undefined) answer.atByKey = result.atByKey.map((at) => at + elapsed);
  return answer;
}

function pair(policy: string, key: string): string {
  return `${policy}\u0000${key}`;
}

/**
 * The names of remembered refusals: what makes two calls the same (each part's policy identity,
 * cost and keys in order), unambiguous whatever a key holds (JSON), and a consume never named as a
 * stack.
 */
function consumeName(request: SpendRequest): string {
  return `c${JSON.stringify([policyIdentity(request), request.cost, request.keys])}`;
}

function stackName(requests: readonly SpendRequest[]): string {
  return `s${JSON.stringify(requests.map((r) => [policyIdentity(r), r.cost, r.keys]))}`;
}

/** The identity last computed for a limits array (a limiter sends the same one on every call). */
const identities = new WeakMap<
  readonly LimitRule[],
  { policy: string; algorithm: string; block: BlockRule | undefined; identity: string }
>();

/**
 * What a refusal is remembered for: the policy's name and its definition (algorithm, every limit,
 * the lockout), not its name alone: two limiters named alike with different limits share stored
 * state but never answers. Computed once per limiter (its limits array), not on every call.
 */
function policyIdentity(request: SpendRequest): string {
  const { policy, algorithm, limits, block } = request;
  const known = identities.get(limits);
  if (
    known !== undefined &&
    known.policy === policy &&
    known.algorithm === algorithm &&
    known.block === block
  ) {
    return known.identity;
  }
  const identity = JSON.stringify([
    policy,
    algorithm,
    limits.map(({ limit, windowMs, burst }) => [limit, windowMs, burst]),
    block ?? null,
  ]);
  identities.set(limits, { policy, algorithm, block, identity });
  return identity;
}
