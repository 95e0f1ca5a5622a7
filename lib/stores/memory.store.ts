import { monotonicNow } from '../core/clock.util';
import { checkOptions } from '../core/options.util';
import type { LimitRule } from '../core/policy';
import { checkedClock } from './clock-reading.util';
import { concurrencyMemory } from './memory/concurrency.memory';
import type { MemoryAlgorithm, PairEvaluation } from './memory/memory-algorithm';
import { MEMORY_MODELS } from './memory/memory-models';
import type { SlidingLogState } from './memory/sliding-log.memory';
import { lastSpendSequence, newSpendTag, nextSpendId, spendSequence } from './spend-id.util';
import { stateLifetimeMs } from './state-lifetime.util';
import { blockKey, epochKey, ledgerKey, storageKey } from './storage-key.util';
import { checkEpochArguments } from './epoch-args.util';
import type {
  AdjustRequest,
  EpochReading,
  RefundRequest,
  ResetRequest,
  SpendRequest,
  SpendResult,
  StackResult,
  Store,
} from './store.interface';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Source of time in ms. Default: a monotonic clock (`performance.timeOrigin + performance.now()`),
   * so a wall-clock jump cannot corrupt windows. A custom clock must return ms as a finite number
   * ≥ 0 (fractions are floored); any other reading, or a clock that throws, is a TypeError /
   * RangeError thrown to the caller.
   */
  readonly clock?: () => number;
  /** How often, at most, a write sweeps out expired state. Default 10 000 ms. */
  readonly sweepIntervalMs?: number;
  /**
   * Most entries kept (one per caller key and limit with state, plus one refund ledger per caller
   * key that was refunded or reset). Default 100 000 (about 36 MB of heap, measured with fixed
   * window state, ~370 bytes an entry). When a write takes the store past it, the
   * entries used longest ago (the oldest 1 %) are forgotten: their callers start again from a
   * full budget. A consume uses every entry of its keys, refused or not, so a flood of new keys
   * pushes out quiet callers before busy or locked-out ones; a flood of more than `maxKeys` keys
   * within one window does reopen budgets (size it above the callers you expect in one window).
   */
  readonly maxKeys?: number;
}

const OPTIONS: readonly (keyof MemoryStoreOptions)[] = ['clock', 'sweepIntervalMs', 'maxKeys'];

interface Entry {
  value: unknown;
  expiresAt: number;
  /**
   * The latest spend sequence issued when the entry was created (see `spend-id.util.ts`): a state
   * born after a spend is not the one it charged (see {@link MemoryStore.forgotten}).
   */
  readonly born: number;
}

/** A caller key's refund ledger, as `lua/lib/ledger.lua` keeps it in Redis. */
interface Ledger {
  /**
   * Members and the instants of their spends, as in Redis: "<id>" refunded, "<id>=<cost>"
   * adjusted, "+<id>" registered when spent and not settled yet, "+<id>=<cost>" such a spend
   * adjusted.
   */
  readonly members: Map<string, number>;
  /** The last reset's mark (see `lua/reset/reset.lua`). */
  resetMark?: number;
  floor?: number;
  /** The longest policy lifetime it was written with: ids are pruned by it (see `remember`). */
  lifetime?: number;
}

/** A caller key's lockout, as `lua/lib/decide.lua` keeps it in Redis ('until:duration:forgetAt'). */
interface Lockout {
  readonly kind: 'lockout';
  /** When it ends. */
  readonly until: number;
  /** How long it lasts (the next one escalates from it). */
  readonly duration: number;
  /** From this instant on it is forgotten: the next lockout starts from the policy's duration. */
  readonly forgetAt: number;
}

/** What the lockouts of a request's keys add to its evaluation (see judgeBlocks in lua/lib/decide.lua). */
interface LockoutJudgement {
  /** The caller keys' lockouts that hold the call back (or that it starts), by end. */
  readonly ends: readonly number[];
  /** Lockouts a refused spend starts: stored name, end and length. */
  readonly starts: ReadonlyArray<{ name: string; key: string; until: number; duration: number }>;
  /** The latest end among `ends`, or 0. */
  readonly blockedUntil: number;
}

const DAY_MS = 86_400_000;

/** At most this many ids per caller key, registrations included (see `lua/lib/ledger.lua`). */
const LEDGER_CAP = 124;

/**
 * Budget in this process's memory, with the same semantics as {@link RedisStore}: for development,
 * tests and single-process apps. Limits are per process: N instances behind a load balancer allow
 * N times the limit. Expired state is swept out as writes happen (no timer per key), so memory
 * stays bounded by the live keys.
 *
 * @example
 * const limiter = new Limiter(new MemoryStore(), { name: 'api', algorithm: 'sliding-window', limit: 100, window: '1m' });
 */
export class MemoryStore implements Store {
  private readonly entries = new Map<string, Entry>();
  /**
   * Device epochs (see {@link readEpoch}), apart from the limiter state: a flood of new caller keys
   * cannot push a revoked login's epoch out (which would trust its old tokens again). Bounded by
   * `maxKeys` of their own, oldest used first.
   */
  private readonly epochs = new Map<string, { readonly epoch: number; expiresAt: number }>();
  private readonly clock: () => number;
  /**
   * How long past its expiry an entry is kept: 0 on the monotonic clock; a day on a custom clock,
   * as `RedisStore` keeps keys a day or more past their windows then, so that a clock which steps
   * back into a window it had passed still finds that window's state.
   */
  private readonly graceMs: number;
  private readonly sweepIntervalMs: number;
  private readonly maxKeys: number;
  private nextSweepAt = 0;
  /** Starts every spend id this store issues: a receipt of another store refunds nothing here. */
  private readonly spendTag = newSpendTag();

  constructor(options: MemoryStoreOptions = {}) {
    checkOptions(options, OPTIONS, 'MemoryStore options');
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new TypeError('MemoryStore options.clock must be a function returning ms');
    }
    const sweep = options.sweepIntervalMs ?? 10_000;
    if (!Number.isFinite(sweep) || sweep < 0) {
      throw new RangeError(`MemoryStore options.sweepIntervalMs must be ≥ 0; got ${sweep}`);
    }
    const maxKeys = options.maxKeys ?? 100_000;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new RangeError(
        `MemoryStore options.maxKeys must be a whole number of at least 1; got ${String(maxKeys)}`,
      );
    }
    // A custom clock's readings are checked where they are read, the first one now.
    this.clock = options.clock
      ? checkedClock(options.clock, 'MemoryStore options.clock')
      : monotonicNow;
    if (options.clock) this.clock();
    this.graceMs = options.clock ? DAY_MS : 0;
    this.sweepIntervalMs = sweep;
    this.maxKeys = maxKeys;
  }

  /** Number of live entries (one per key and limit with state); for tests and metrics. */
  get size(): number {
    this.sweep(this.now(), true);
    return this.entries.size;
  }

  consume(request: SpendRequest): Promise<SpendResult> {
    return Promise.resolve(this.decide(request, true));
  }

  peek(request: SpendRequest): Promise<SpendResult> {
    return Promise.resolve(this.decide(request, false));
  }

  consumeStack(requests: readonly SpendRequest[]): Promise<StackResult> {
    return Promise.resolve(this.decideStack(requests, true));
  }

  peekStack(requests: readonly SpendRequest[]): Promise<StackResult> {
    return Promise.resolve(this.decideStack(requests, false));
  }

  refund(request: RefundRequest): Promise<void> {
    this.settleSpend(request);
    return Promise.resolve();
  }

  adjust(request: AdjustRequest): Promise<void> {
    this.settleSpend(request, request.actualCost);
    return Promise.resolve();
  }

  extend(request: RefundRequest): Promise<boolean> {
    const now = this.now();
    let renewed = 0;
    this.eachState(request, now, (name, state, rule) => {
      const extended = concurrencyMemory.extend(state, rule.windowMs, {
        ...request,
        now,
        keep: 0,
        reserved: request.cost,
      });
      renewed += extended.renewed;
      this.write(name, extended.next.state, extended.next.expiresAt);
    });
    return Promise.resolve(renewed === request.keys.length * request.limits.length * request.cost);
  }

  /** Runs `fn` on every (key, limit) state of a concurrency request that holds leases. */
  private eachState(
    request: RefundRequest,
    now: number,
    fn: (name: string, state: SlidingLogState, rule: LimitRule) => void,
  ): void {
    for (const key of request.keys) {
      request.limits.forEach((rule, l) => {
        const name = storageKey('', key, request.policy, l);
        const state = this.read(name, concurrencyMemory, now) as SlidingLogState | undefined;
        if (state !== undefined) fn(name, state, rule);
      });
    }
  }

  /** Releases a lease: removes its members, whatever their instant; no ledger (see concurrency/refund.lua). */
  private release(request: RefundRequest, now: number): void {
    this.eachState(request, now, (name, state, rule) => {
      const next = concurrencyMemory.refund(state, rule, {
        ...request,
        now,
        keep: 0,
        reserved: request.cost,
      });
      if (next === null) this.entries.delete(name);
      else if (next !== undefined) this.write(name, next.state, next.expiresAt);
    });
  }

  /**
   * A refund, or (with `target`) an adjustment to that cost, per caller key; mirrors
   * `lua/lib/refund-frame.lua`.
   */
  private settleSpend(request: RefundRequest, target?: number): void {
    const algorithm = MEMORY_MODELS[request.algorithm];
    const now = this.now();
    if (request.algorithm === 'concurrency') {
      if (target === undefined) this.release(request, now);
      return;
    }
    const lifetime = stateLifetimeMs(request.algorithm, request.limits);
    const { spendId, at } = request;
    for (const [k, key] of request.keys.entries()) {
      const ledgerName = ledgerKey('', key, request.policy);
      const ledger = this.live(ledgerName, now) as Ledger | undefined;
      const entry =
        spendId && ledger && now - at <= lifetime ? ledgerEntry(ledger, spendId, at) : undefined;
      const adjusted = entry?.adjusted;
      // (an adjusted spend is not adjusted again)
      if (
        (target !== undefined && adjusted) ||
        this.forgotten(request, key) ||
        settled(ledger, request, k, now, lifetime, entry)
      )
        continue;
      const current = adjusted?.cost ?? request.cost;
      const up = target !== undefined && target > current;
      const context = {
        spendId,
        at,
        now,
        reserved: request.cost,
        keep: target === undefined ? 0 : Math.min(current, target),
        cost: target === undefined ? current : Math.abs(target - current),
      };
      let given = false;
      if (context.cost > 0) {
        request.limits.forEach((rule, l) => {
          const name = storageKey('', key, request.policy, l);
          const state = this.read(name, algorithm, now);
          const next = up
            ? algorithm.charge(state, rule, context)
            : state === undefined
              ? undefined
              : algorithm.refund(state, rule, context);
          if (next === undefined) return;
          given = true;
          if (next === null) this.entries.delete(name);
          else this.write(name, next.state, next.expiresAt);
        });
      }
      if (!spendId || (target === undefined && !given)) continue;
      const marked = ledger ?? { members: new Map<string, number>() };
      // A registered spend stays registered while it still holds something to give back (an
      // adjustment to more than 0); its refund, or an adjustment to 0, settles it.
      const pending = entry?.pending === true;
      if (adjusted) marked.members.delete(adjusted.member);
      else if (pending) marked.members.delete(`+${spendId}`);
      const member =
        target === undefined
          ? spendId
          : pending && target > 0
            ? `+${spendId}=${target}`
            : `${spendId}=${target}`;
      remember(marked, member, at, now, lifetime);
      // As long as the spend can weigh (its `at` may be ahead of a clock that stepped back),
      // never shorter than before.
      const expiresAt = Math.max(now, at) + marked.lifetime!;
      this.write(
        ledgerName,
        marked,
        Math.max(expiresAt, this.entries.get(ledgerName)?.expiresAt ?? 0),
      );
    }
  }

  /**
   * Whether the spend's count on `key` was forgotten since it was charged: a state of the key was
   * born after the spend (pushed out under `maxKeys`, or reset, and written again), or the spend
   * was never charged here (another store's or process's, e.g. a fallback receipt refunded
   * elsewhere). Its receipt then
   * refunds and adjusts nothing there, as after a reset: else a caller pushed out while attempts
   * were in flight would get a full budget and its old spends back.
   */
  private forgotten(request: RefundRequest, key: string): boolean {
    if (request.spendId === undefined) return false;
    const sequence = spendSequence(request.spendId, this.spendTag);
    if (sequence === undefined) return true; // another store's spend: never charged here
    return request.limits.some(
      (_, l) => (this.entries.get(storageKey('', key, request.policy, l))?.born ?? 0) > sequence,
    );
  }

  /** A new MemoryStore, for `failMode: 'memory'` (this store does not fail, but a limiter asks). */
  fallback(): MemoryStore {
    return new MemoryStore();
  }

  reset(request: ResetRequest): Promise<void> {
    const now = this.now();
    const lifetime = stateLifetimeMs(request.algorithm, request.limits);
    for (const key of request.keys) {
      this.forgetCount(key, request.policy, request.limits.length, now, lifetime);
      this.entries.delete(blockKey('', key, request.policy)); // whatever the policy says now
    }
    return Promise.resolve();
  }

  /**
   * Forgets a caller key's count under every limit and moves its reset mark, so that receipts of
   * spends made before refund and adjust nothing (a reset, a lockout's `restart`); mirrors
   * `lua/reset/reset.lua` and forgetCount in `lua/lib/decide.lua`.
   */
  private forgetCount(
    key: string,
    policy: string,
    limitCount: number,
    now: number,
    lifetime: number,
  ): void {
    const ledgerName = ledgerKey('', key, policy);
    // The ledger outlives every state it wipes (a clock behind can have written later expiries).
    let expiresAt = Math.max(now + lifetime, this.entries.get(ledgerName)?.expiresAt ?? 0);
    for (let l = 0; l < limitCount; l++) {
      const name = storageKey('', key, policy, l);
      expiresAt = Math.max(expiresAt, this.entries.get(name)?.expiresAt ?? 0);
      this.entries.delete(name);
    }
    const ledger = (this.live(ledgerName, now) as Ledger | undefined) ?? {
      members: new Map<string, number>(),
    };
    ledger.resetMark = Math.max((ledger.resetMark ?? 0) + 1, now);
    this.write(ledgerName, ledger, expiresAt);
  }

  /**
   * Registers a spend that will be settled by its receipt ("+<id>" at its instant) in the ledger of
   * each of its keys, so that its first refund or adjustment is honoured whatever the ledger trims
   * since; mirrors `register` in `lua/lib/ledger.lua`.
   */
  private register(request: SpendRequest, spendId: string, now: number): void {
    const lifetime = stateLifetimeMs(request.algorithm, request.limits);
    for (const key of request.keys) {
      const name = ledgerKey('', key, request.policy);
      const ledger = (this.live(name, now) as Ledger | undefined) ?? {
        members: new Map<string, number>(),
      };
      remember(ledger, `+${spendId}`, now, now, lifetime);
      const expiresAt = now + ledger.lifetime!;
      this.write(name, ledger, Math.max(expiresAt, this.entries.get(name)?.expiresAt ?? 0));
    }
  }

  /** `{ resetMarks }` of a spend on the request's keys, or nothing when no key was ever reset. */
  private resetMarks(request: SpendRequest, now: number): { resetMarks?: number[] } {
    const marks = request.keys.map(
      (key) =>
        (this.live(ledgerKey('', key, request.policy), now) as Ledger | undefined)?.resetMark ?? 0,
    );
    return marks.some((mark) => mark > 0) ? { resetMarks: marks } : {};
  }

  /**
   * The value stored under `name`, if it has not expired. As in Redis, an entry is alive at exactly
   * its expiry instant and gone only after it: the two stores agree at every boundary.
   */
  private live(name: string, now: number): unknown {
    const entry = this.entries.get(name);
    if (!entry) return undefined;
    if (entry.expiresAt + this.graceMs < now) {
      this.entries.delete(name);
      return undefined;
    }
    return entry.value;
  }

  private decide(request: SpendRequest, spend: boolean): SpendResult {
    return this.decideStack([request], spend).results[0]!;
  }

  /** Evaluates every request before writing anything; charges all of them only if all fit. */
  private decideStack(requests: readonly SpendRequest[], spend: boolean): StackResult {
    const clockNow = this.now();
    const spendId = spend ? nextSpendId(this.spendTag) : undefined;
    let now = clockNow;
    let parts = requests.map((request) => this.judge(request, now, spendId));
    // A state from a later window: the clock stepped back. Time is never earlier than the state
    // has seen: evaluate again from the start of that window (as lua/lib/decide.lua does).
    const seen = Math.max(...parts.map((part) => part.seen));
    if (seen > now) {
      now = seen;
      parts = requests.map((request) => this.judge(request, now, spendId));
    }
    // Waits judged at `now`, counted from the clock's reading.
    const behind = (ms: number) => (ms > 0 ? ms + now - clockNow : 0);
    let refusingIndex = -1;
    parts.forEach((part, r) => {
      // The longest wait refuses; ties go to the first request.
      if (
        !part.fits &&
        (refusingIndex < 0 || part.retryAfterMs > parts[refusingIndex]!.retryAfterMs)
      )
        refusingIndex = r;
    });
    const allowed = refusingIndex < 0;
    const results = parts.map((part, r): SpendResult => {
      let resetAfterMs = 0;
      const { lockouts } = part;
      if (lockouts) {
        for (const ends of lockouts.ends) resetAfterMs = Math.max(resetAfterMs, behind(ends - now));
        if (!allowed && spend) {
          const { policy, limits, block } = requests[r]!;
          for (const { name, key, until, duration } of lockouts.starts) {
            const lockout: Lockout = {
              kind: 'lockout',
              until,
              duration,
              forgetAt: until + block!.forgetAfterMs,
            };
            this.write(name, lockout, lockout.forgetAt);
            // `restart`: the lockout forgets the key's count (see forgetCount in decide.lua).
            if (block!.restart) {
              const lifetime = stateLifetimeMs(requests[r]!.algorithm, limits);
              this.forgetCount(key, policy, limits.length, now, lifetime);
            }
          }
        }
      }
      // A refusal that starts a `restart` lockout forgets that key's count: its lockout's end
      // (counted above) is when it is back to a full budget (see settle in decide.lua).
      const restarting =
        !allowed && requests[r]!.block?.restart === true ? lockouts?.starts : undefined;
      const limitCount = requests[r]!.limits.length;
      for (const [p, { name, evaluation }] of part.pairs.entries()) {
        const key = restarting && requests[r]!.keys[Math.floor(p / limitCount)];
        if (!restarting?.some((start) => start.key === key))
          resetAfterMs = Math.max(resetAfterMs, behind(evaluation.resetMs(allowed)));
        if (allowed && spend) {
          const { state, expiresAt } = evaluation.next();
          this.write(name, state, expiresAt);
        } else if (spend) {
          this.touch(name); // refused: still in use (a locked-out caller must stay locked out)
        }
      }
      // A spend that will be settled by its receipt is registered in its keys' ledgers (see
      // `register` in lua/lib/ledger.lua).
      if (allowed && spend && requests[r]!.settles === true)
        this.register(requests[r]!, spendId!, now);
      // A caller's ledger is never older than its state, so eviction never keeps one without the
      // other's memory of refunds and resets.
      if (spend) {
        const { keys, policy } = requests[r]!;
        for (const key of keys) this.touch(ledgerKey('', key, policy));
        // A caller hammering while locked out keeps its lockout among the last to be forgotten.
        if (lockouts) for (const key of keys) this.touch(blockKey('', key, policy));
      }
      return {
        allowed,
        remaining: allowed ? part.remaining - requests[r]!.cost : part.remaining,
        limitIndex: part.budgetFits ? part.limitIndex : part.blockedLimitIndex,
        retryAfterMs: part.fits ? 0 : behind(part.retryAfterMs),
        resetAfterMs,
        blockedKeyIndex: part.fits ? -1 : part.blockedKeyIndex,
        at: now,
        ...(spendId !== undefined && allowed && { spendId }),
        ...(spendId !== undefined && allowed && this.resetMarks(requests[r]!, now)),
        ...(lockouts && lockouts.blockedUntil > 0 && { blockedUntil: lockouts.blockedUntil }),
      };
    });
    if (allowed && spend) this.sweep(now, false);
    return { allowed, refusingIndex, results };
  }

  /**
   * {@link evaluate}, then for a policy with a lockout each key's lockout, as judgeBlocks in
   * `lua/lib/decide.lua` does: a key locked out refuses until its end (remaining 0); a key out of
   * budget refuses until the lockout a refused spend starts for it ends.
   */
  private judge(request: SpendRequest, now: number, spendId: string | undefined) {
    const part = this.evaluate(request, now, spendId);
    const { block } = request;
    if (block === undefined) return part;
    const limitCount = request.limits.length;
    let held = false;
    let longest = 0;
    let refusingKey = -1;
    let refusingLimit = 0;
    let blockedUntil = 0;
    const ends: number[] = [];
    const starts: Array<{ name: string; key: string; until: number; duration: number }> = [];
    request.keys.forEach((key, k) => {
      // The key's own binding limit: its longest budget wait, else its least room (ties: first).
      let budgetFits = true;
      let budgetWait = 0;
      let waitLimit = 0;
      let room = Infinity;
      let roomLimit = 0;
      for (let l = 0; l < limitCount; l++) {
        const { evaluation } = part.pairs[k * limitCount + l]!;
        if (!evaluation.fits) {
          if (budgetFits || evaluation.waitMs > budgetWait) {
            budgetWait = evaluation.waitMs;
            waitLimit = l;
          }
          budgetFits = false;
        }
        if (evaluation.room < room) {
          room = evaluation.room;
          roomLimit = l;
        }
      }
      const name = blockKey('', key, request.policy);
      const stored = this.live(name, now) as Lockout | undefined;
      const remembered = stored?.kind === 'lockout' && stored.forgetAt > now ? stored : undefined;
      let keyWait = -1;
      let end = 0;
      if (remembered !== undefined && remembered.until > now) {
        held = true;
        end = remembered.until;
        keyWait = Math.max(end - now, budgetFits ? 0 : budgetWait);
      } else if (!budgetFits && block.durationMs === 0) {
        keyWait = budgetWait; // a policy that starts no lockout (it honours those of its name)
      } else if (!budgetFits) {
        const duration =
          remembered === undefined
            ? block.durationMs
            : Math.max(
                block.durationMs,
                Math.min(Math.floor(remembered.duration * block.factor), block.maxMs),
              );
        end = now + duration;
        // (`restart`: the lockout forgets the key's count, so only the lockout is waited out)
        keyWait = block.restart ? duration : Math.max(budgetWait, duration);
        starts.push({ name, key, until: end, duration });
      }
      if (end > 0) ends.push(end);
      blockedUntil = Math.max(blockedUntil, end);
      if (keyWait >= 0 && (refusingKey < 0 || keyWait > longest)) {
        longest = keyWait;
        refusingKey = k;
        refusingLimit = budgetFits ? roomLimit : waitLimit;
      }
    });
    part.lockouts = { ends, starts, blockedUntil };
    if (refusingKey < 0) return part;
    part.fits = false;
    part.retryAfterMs = longest;
    part.blockedKeyIndex = refusingKey;
    // The refusing key binds with its own limit (see judgeBlocks in lua/lib/decide.lua).
    part.budgetFits = false;
    part.blockedLimitIndex = refusingLimit;
    if (held) part.remaining = 0;
    return part;
  }

  /** Every limit of one request on each of its keys, against the state before this call. */
  private evaluate(request: SpendRequest, now: number, spendId: string | undefined) {
    const algorithm = MEMORY_MODELS[request.algorithm];
    const context = { cost: request.cost, now, spendId };
    const pairs: Array<{ name: string; evaluation: PairEvaluation<unknown> }> = [];
    let fits = true;
    let remaining = Infinity;
    let limitIndex = 0;
    let retryAfterMs = 0;
    let blockedKeyIndex = -1;
    let blockedLimitIndex = 0;
    let seen = -1;
    request.keys.forEach((key, k) =>
      request.limits.forEach((rule, l) => {
        const name = storageKey('', key, request.policy, l);
        const evaluation = algorithm.evaluate(this.read(name, algorithm, now), rule, context);
        pairs.push({ name, evaluation });
        if (evaluation.seen !== undefined) seen = Math.max(seen, evaluation.seen);
        if (!evaluation.fits) {
          fits = false;
          if (evaluation.waitMs > retryAfterMs || blockedKeyIndex < 0) {
            retryAfterMs = evaluation.waitMs;
            blockedKeyIndex = k;
            blockedLimitIndex = l;
          }
        }
        if (evaluation.room < remaining || (evaluation.room === remaining && l < limitIndex)) {
          remaining = evaluation.room;
          limitIndex = l;
        }
      }),
    );
    return {
      pairs,
      fits,
      /** Whether the budget alone fits (a lockout can still refuse: see {@link judge}). */
      budgetFits: fits,
      remaining,
      limitIndex,
      retryAfterMs,
      blockedKeyIndex,
      blockedLimitIndex,
      seen,
      lockouts: undefined as LockoutJudgement | undefined,
    };
  }

  private read(name: string, algorithm: MemoryAlgorithm<unknown>, now: number): unknown {
    const value = this.live(name, now);
    return algorithm.owns(value) ? value : undefined;
  }

  private now(): number {
    return Math.floor(this.clock());
  }

  /**
   * The device epoch stored under `key` (0 when absent or expired), kept at least `keepMs` from
   * now on this store's clock (see {@link Store.readEpoch}).
   */
  readEpoch(key: string, keepMs: number): Promise<EpochReading> {
    try {
      checkEpochArguments(key, keepMs, 'readEpoch');
      const name = epochKey('', key);
      const now = this.now();
      const stored = this.liveEpoch(name, now);
      if (stored === undefined) return Promise.resolve({ epoch: 0, now });
      this.keepEpoch(name, stored.epoch, Math.max(stored.expiresAt, now + keepMs), now);
      return Promise.resolve({ epoch: stored.epoch, now });
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /**
   * Moves the device epoch stored under `key` on by one (creating it at 1), keeps it at least
   * `keepMs` from now on this store's clock, and resolves with the new epoch (see
   * {@link Store.bumpEpoch}).
   */
  bumpEpoch(key: string, keepMs: number): Promise<number> {
    try {
      checkEpochArguments(key, keepMs, 'bumpEpoch');
      const name = epochKey('', key);
      const now = this.now();
      const stored = this.liveEpoch(name, now);
      const epoch = (stored?.epoch ?? 0) + 1;
      this.keepEpoch(name, epoch, Math.max(stored?.expiresAt ?? 0, now + keepMs), now);
      return Promise.resolve(epoch);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** An epoch that has not expired (as in Redis: alive at its expiry instant, gone after it). */
  private liveEpoch(name: string, now: number): { epoch: number; expiresAt: number } | undefined {
    const stored = this.epochs.get(name);
    if (stored === undefined) return undefined;
    if (stored.expiresAt < now) {
      this.epochs.delete(name);
      return undefined;
    }
    return stored;
  }

  /** Stores an epoch as the one used last, forgetting the oldest 1 % past `maxKeys`. */
  private keepEpoch(name: string, epoch: number, expiresAt: number, now: number): void {
    this.epochs.delete(name);
    this.epochs.set(name, { epoch, expiresAt });
    if (this.epochs.size <= this.maxKeys) return;
    for (const [old, stored] of this.epochs) {
      if (stored.expiresAt < now) this.epochs.delete(old);
    }
    let forget = this.epochs.size > this.maxKeys ? Math.ceil(this.maxKeys / 100) : 0;
    for (const old of this.epochs.keys()) {
      if (forget-- <= 0) break;
      this.epochs.delete(old);
    }
  }

  /**
   * Stores an entry as the one used last (Map order is order of use), forgetting the oldest 1 %
   * when that takes the store past `maxKeys` (in one pass: deleting from the front one at a time
   * would walk over the holes it leaves every time).
   */
  private write(name: string, value: unknown, expiresAt: number): void {
    const born = this.entries.get(name)?.born ?? lastSpendSequence();
    this.entries.delete(name);
    this.entries.set(name, { value, expiresAt, born });
    if (this.entries.size <= this.maxKeys) return;
    let forget = Math.ceil(this.maxKeys / 100);
    for (const old of this.entries.keys()) {
      this.entries.delete(old);
      if (--forget === 0) break;
    }
  }

  /** Marks an entry as used last, if there is one. */
  private touch(name: string): void {
    const entry = this.entries.get(name);
    if (!entry) return;
    this.entries.delete(name);
    this.entries.set(name, entry);
  }

  /** Drops expired entries, at most once per sweep interval unless forced. */
  private sweep(now: number, force: boolean): void {
    if (!force && now < this.nextSweepAt) return;
    this.nextSweepAt = now + this.sweepIntervalMs;
    for (const [name, entry] of this.entries) {
      if (entry.expiresAt + this.graceMs < now) this.entries.delete(name);
    }
    for (const [name, stored] of this.epochs) {
      if (stored.expiresAt < now) this.epochs.delete(name);
    }
  }
}

/** What a ledger holds of one spend (see `ledgerEntry` in `lua/lib/refund-frame.lua`). */
interface LedgerEntry {
  /** Refunded ("<id>"). */
  readonly refunded: boolean;
  /** Registered when spent and not settled yet ("+<id>", or "+<id>=<cost>" once adjusted). */
  readonly pending: boolean;
  /** Its adjustment, if it was adjusted: the new cost and the member recording it. */
  readonly adjusted?: { cost: number; member: string };
}

/** Whether a refund must give nothing back; mirrors `settled` in `lua/lib/refund-frame.lua`. */
function settled(
  ledger: Ledger | undefined,
  request: RefundRequest,
  k: number,
  now: number,
  lifetime: number,
  entry: LedgerEntry | undefined,
): boolean {
  if (entry?.refunded === true) return true;
  if (now - request.at > lifetime) return true; // it weighs on nothing any more (or might not)
  const mark = ledger?.resetMark;
  if (mark !== undefined && mark > (request.resetMarks?.[k] ?? 0)) return true; // reset since
  // Beyond the ledger's memory, unless it holds the spend as registered and unsettled.
  return entry?.pending !== true && ledger?.floor !== undefined && request.at <= ledger.floor;
}

/** The ledger's members at the spend's instant that name it (one pass, as Redis reads them). */
function ledgerEntry(ledger: Ledger, spendId: string, at: number): LedgerEntry {
  const plain = `${spendId}=`;
  const mark = `+${spendId}`;
  const pendingPrefix = `${mark}=`;
  let refunded = false;
  let pending = false;
  let adjusted: { cost: number; member: string } | undefined;
  for (const [member, instant] of ledger.members) {
    if (instant !== at) continue;
    if (member === spendId) refunded = true;
    else if (member === mark) pending = true;
    else if (member.startsWith(plain)) {
      adjusted = { cost: Number(member.slice(plain.length)), member };
    } else if (member.startsWith(pendingPrefix)) {
      adjusted = { cost: Number(member.slice(pendingPrefix.length)), member };
      pending = true;
    }
  }
  return { refunded, pending, ...(adjusted && { adjusted }) };
}

/**
 * Writes a member; prunes ids past the longest lifetime the ledger was written with (never by the
 * limits one receipt names: see `tidy` in `lua/lib/ledger.lua`) and trims to the cap as
 * `trimOldest` there does: settled ids first, oldest first (by instant, then member: Redis's
 * order); then registrations ("+…"), the last ones in Redis's order of their scores -(at + 1)
 * (latest instant first, then member). The floor rises to the latest instant taken off, a
 * registration never adjusted ("+<id>") excepted.
 */
function remember(ledger: Ledger, member: string, at: number, now: number, lifetime: number): void {
  ledger.lifetime = Math.max(lifetime, ledger.lifetime ?? 0);
  ledger.members.set(member, at);
  for (const [id, instant] of ledger.members) {
    if (instant < now - ledger.lifetime) ledger.members.delete(id);
  }
  let extra = ledger.members.size - LEDGER_CAP;
  if (extra <= 0) return;
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const ids = [...ledger.members]
    .filter(([id]) => !id.startsWith('+'))
    .sort(([a, x], [b, y]) => x - y || byName(a, b));
  for (const [id, instant] of ids) {
    if (extra === 0) return;
    extra--;
    ledger.members.delete(id);
    ledger.floor = Math.max(ledger.floor ?? -Infinity, instant);
  }
  const registrations = [...ledger.members]
    .filter(([id]) => id.startsWith('+'))
    .sort(([a, x], [b, y]) => y - x || byName(a, b));
  for (const [id, instant] of registrations.slice(Math.max(registrations.length - extra, 0))) {
    ledger.members.delete(id);
    if (id.includes('=')) ledger.floor = Math.max(ledger.floor ?? -Infinity, instant);
  }
}
