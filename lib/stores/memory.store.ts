import { monotonicNow } from '../core/clock.util';
import { checkOptions } from '../core/options.util';
import type { BoardBook } from './board-book';
import { MemoryBoardBook } from './board-book.memory';
import { MemoryOverrideBook } from './override-book.memory';
import type { OverrideBook } from '../core/overrides';
import { checkedClock } from './clock-reading.util';
import { concurrencyMemory } from './memory/concurrency.memory';
import { type Ledger, remember } from './memory/memory-ledger';
import { judgeRequest, type Lockout } from './memory/memory-judge';
import { eachLease, settleSpend } from './memory/memory-settle';
import { MemoryTable } from './memory/memory-table';
import { MEMORY_MODELS } from './memory/memory-models';
import { grantOfLeases } from '../core/store';
import { newSpendTag, nextSpendId } from './spend-id.util';
import { stateLifetimeMs } from './state-lifetime.util';
import { blockKey, epochKey, ledgerKey, storageKey } from './storage-key.util';
import { checkEpochArguments } from './epoch-args.util';
import type {
  AdjustRequest,
  EpochReading,
  RefundRequest,
  GrantRequest,
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

const DAY_MS = 86_400_000;

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
  private readonly clock: () => number;
  private readonly table: MemoryTable;
  /** Starts every spend id this store issues: a receipt of another store refunds nothing here. */
  private readonly spendTag = newSpendTag();
  private boardBook?: BoardBook;
  private overrideBook?: MemoryOverrideBook;

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
    // A custom clock keeps entries a day past their expiry, as RedisStore keeps keys then (see
    // MemoryTable's graceMs).
    this.table = new MemoryTable(options.clock ? DAY_MS : 0, sweep, maxKeys);
  }

  /**
   * The ops board's book of this process (see `RedlimitBoardModule`): what its board recorder
   * writes and its board reads, on this store's clock.
   */
  board(): BoardBook {
    return (this.boardBook ??= new MemoryBoardBook(this.clock));
  }

  /** Live policy overrides of this process (see `PolicyOverrides`), on this store's clock. */
  overrides(): OverrideBook {
    return (this.overrideBook ??= new MemoryOverrideBook(this.clock));
  }

  /** Number of live entries (one per key and limit with state); for tests and metrics. */
  get size(): number {
    this.table.sweep(this.now(), true);
    return this.table.size;
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
    settleSpend(this.table, this.spendTag, request, this.now());
    return Promise.resolve();
  }

  adjust(request: AdjustRequest): Promise<void> {
    settleSpend(this.table, this.spendTag, request, this.now(), request.actualCost);
    return Promise.resolve();
  }

  extend(request: RefundRequest): Promise<boolean> {
    const now = this.now();
    let renewed = 0;
    eachLease(this.table, request, now, (name, state, rule) => {
      const extended = concurrencyMemory.extend(state, rule.windowMs, {
        ...request,
        now,
        keep: 0,
        reserved: request.cost,
      });
      renewed += extended.renewed;
      this.table.write(name, extended.next.state, extended.next.expiresAt);
    });
    return Promise.resolve(renewed === request.keys.length * request.limits.length * request.cost);
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
      this.table.delete(blockKey('', key, request.policy)); // whatever the policy says now
    }
    return Promise.resolve();
  }

  grant(request: GrantRequest): Promise<void> {
    if (request.algorithm === 'concurrency') return Promise.reject(grantOfLeases(request.policy));
    const now = this.now();
    const lifetime = stateLifetimeMs(request.algorithm, request.limits);
    const algorithm = MEMORY_MODELS[request.algorithm];
    for (const key of request.keys) {
      const ledgerName = ledgerKey('', key, request.policy);
      // As forgetCount: the ledger outlives every state the grant touched.
      let expiresAt = Math.max(now + lifetime, this.table.entry(ledgerName)?.expiresAt ?? 0);
      let given = false;
      request.limits.forEach((rule, l) => {
        const name = storageKey('', key, request.policy, l);
        expiresAt = Math.max(expiresAt, this.table.entry(name)?.expiresAt ?? 0);
        const state = this.table.read(name, algorithm, now);
        if (state === undefined) return;
        const next = algorithm.grant?.(state, rule, { cost: request.units, now });
        if (next === undefined) return;
        given = true;
        if (next === null) this.table.delete(name);
        else this.table.write(name, next.state, next.expiresAt);
      });
      // Receipts of spends made before give nothing back (see lua/lib/refund-frame.lua).
      if (given) this.moveResetMark(ledgerName, now, expiresAt);
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
    let expiresAt = Math.max(now + lifetime, this.table.entry(ledgerName)?.expiresAt ?? 0);
    for (let l = 0; l < limitCount; l++) {
      const name = storageKey('', key, policy, l);
      expiresAt = Math.max(expiresAt, this.table.entry(name)?.expiresAt ?? 0);
      this.table.delete(name);
    }
    this.moveResetMark(ledgerName, now, expiresAt);
  }

  /** Moves a ledger's reset mark on (max(mark + 1, now)) and keeps it until `expiresAt`. */
  private moveResetMark(ledgerName: string, now: number, expiresAt: number): void {
    const ledger = (this.table.live(ledgerName, now) as Ledger | undefined) ?? {
      members: new Map<string, number>(),
    };
    ledger.resetMark = Math.max((ledger.resetMark ?? 0) + 1, now);
    this.table.write(ledgerName, ledger, expiresAt);
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
      const ledger = (this.table.live(name, now) as Ledger | undefined) ?? {
        members: new Map<string, number>(),
      };
      remember(ledger, `+${spendId}`, now, now, lifetime);
      const expiresAt = now + ledger.lifetime!;
      this.table.write(name, ledger, Math.max(expiresAt, this.table.entry(name)?.expiresAt ?? 0));
    }
  }

  /** `{ resetMarks }` of a spend on the request's keys, or nothing when no key was ever reset. */
  private resetMarks(request: SpendRequest, now: number): { resetMarks?: number[] } {
    const marks = request.keys.map(
      (key) =>
        (this.table.live(ledgerKey('', key, request.policy), now) as Ledger | undefined)
          ?.resetMark ?? 0,
    );
    return marks.some((mark) => mark > 0) ? { resetMarks: marks } : {};
  }

  private decide(request: SpendRequest, spend: boolean): SpendResult {
    return this.decideStack([request], spend).results[0]!;
  }

  /** Evaluates every request before writing anything; charges all of them only if all fit. */
  private decideStack(requests: readonly SpendRequest[], spend: boolean): StackResult {
    const clockNow = this.now();
    const spendId = spend ? nextSpendId(this.spendTag) : undefined;
    let now = clockNow;
    let parts = requests.map((request) => judgeRequest(this.table, request, now, spendId));
    // A state from a later window: the clock stepped back. Time is never earlier than the state
    // has seen: evaluate again from the start of that window (as lua/lib/decide.lua does).
    const seen = Math.max(...parts.map((part) => part.seen));
    if (seen > now) {
      now = seen;
      parts = requests.map((request) => judgeRequest(this.table, request, now, spendId));
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
            this.table.write(name, lockout, lockout.forgetAt);
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
          this.table.write(name, state, expiresAt);
        } else if (spend) {
          this.table.touch(name); // refused: still in use (a locked-out caller must stay locked out)
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
        for (const key of keys) this.table.touch(ledgerKey('', key, policy));
        // A caller hammering while locked out keeps its lockout among the last to be forgotten.
        if (lockouts) for (const key of keys) this.table.touch(blockKey('', key, policy));
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
    if (allowed && spend) this.table.sweep(now, false);
    return { allowed, refusingIndex, results };
  }

  /**
   * The lockout of `policy` on caller key `key` while it holds (its end, length and when it is
   * forgotten), or undefined. For the memory fallback of a RedisStore, which writes the lockouts it
   * started into Redis when Redis is back.
   * @internal
   */
  lockoutOf(
    policy: string,
    key: string,
  ): { readonly until: number; readonly duration: number; readonly forgetAt: number } | undefined {
    const now = this.now();
    const stored = this.table.live(blockKey('', key, policy), now) as Lockout | undefined;
    if (stored?.kind !== 'lockout' || stored.until <= now) return undefined;
    return { until: stored.until, duration: stored.duration, forgetAt: stored.forgetAt };
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
      const stored = this.table.liveEpoch(name, now);
      if (stored === undefined) return Promise.resolve({ epoch: 0, now });
      this.table.keepEpoch(name, stored.epoch, Math.max(stored.expiresAt, now + keepMs), now);
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
      const stored = this.table.liveEpoch(name, now);
      const epoch = (stored?.epoch ?? 0) + 1;
      this.table.keepEpoch(name, epoch, Math.max(stored?.expiresAt ?? 0, now + keepMs), now);
      return Promise.resolve(epoch);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
}
