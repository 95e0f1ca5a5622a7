import type { LimitRule } from '../core/policy';
import type {
  AdjustRequest,
  RefundRequest,
  GrantRequest,
  ResetRequest,
  SpendRequest,
  SpendResult,
  Store,
} from '../core/store';
import { type FleetView, sharedLimits } from './fleet';
import { MemoryStore } from './memory.store';

/**
 * How much the journal of fallback spends holds, in the entries its spends weigh on (a caller key
 * and limit each, and a ledger per caller key): once full, the fallback refuses until old spends
 * weigh on nothing (a spend it allowed is never dropped uncharged). Its MemoryStore keeps twice as
 * many entries, so a flood of keys cannot push out a caller whose spends are journaled.
 */
export const MAX_FALLBACK_ENTRIES = 200_000;

/** One spend the fallback allowed, until it is charged into the store or weighs on nothing. */
export interface FallbackSpend {
  /** Its spend id (the fallback's: it names sliding-log members in the store too). */
  readonly id: string;
  /** The spend's request, with the policy's whole limits (as the store charges them). */
  readonly request: SpendRequest;
  /** Its instant on the fallback's clock (the store's clock, estimated). */
  readonly at: number;
  /**
   * Where its charge stands in the store when that is not `at`: a token-bucket or GCRA spend is
   * charged with the others of its caller key as the backlog they leave together, at the instant
   * of that charge (see `RedisFleet`); later changes (a refund) go there.
   */
  chargedAt?: number;
  /** The instant whose reset marks it is charged under (default `at`: not on a key reset since). */
  readonly markAt?: number;
  /** The limits the fallback charged it against (this process's share when it was made). */
  readonly shared: readonly LimitRule[];
  /** What it costs now (its cost; less or more after an adjustment; 0 once refunded). */
  units: number;
  /** What of it was charged into the store (0 until it is reconciled). */
  charged: number;
  /** Adjusted once already (a spend is adjusted at most once, as in the store). */
  adjusted: boolean;
  /** Until when it can weigh on anything (the fallback's clock, ms). */
  readonly until: number;
}

/** A lockout the fallback started, until it is written into the store (or is over). */
export interface FallbackLockout {
  /** Its policy. */
  readonly policy: string;
  /** The caller key it holds. */
  readonly key: string;
  /** When it ends (the fallback's clock). */
  readonly until: number;
  /** How long it lasts (the next one escalates from it). */
  readonly duration: number;
  /** When it is forgotten. */
  readonly forgetAt: number;
  /** Written into the store already. */
  written: boolean;
}

/** At most this many lockouts wait to be written into the store (more: the fallback's own hold). */
export const MAX_FALLBACK_LOCKOUTS = 100_000;

/** What the fallback tells its store (the RedisStore it stands in for). */
export interface FallbackOwner {
  /** The fleet as last seen (undefined: never seen; the fallback refuses). */
  view(): FleetView | undefined;
  /** How long a spend of a policy can weigh on its state (ms). */
  lifetimeMs(request: SpendRequest): number;
  /** A spend already charged into the store was refunded or adjusted here: the store owes it. */
  owes(): void;
}

/**
 * Where `failMode: 'memory'` counts while a RedisStore fails, for the whole fleet: an in-process
 * MemoryStore (on the Redis clock as last estimated) whose limits are this process's share of the
 * policy's (see `sharedLimits`), so the fleet's processes together admit no more than the limit.
 * Every spend it allows is kept in a journal until the store is back, then charged into the store
 * in the window where it was made (see `RedisStore`): a caller cannot get a fresh budget by waiting
 * for the recovery. A refund or an adjustment of a fallback receipt is applied to the memory store
 * and to the journal (and, once the spend was charged into the store, to the store too).
 */
export class FleetFallback implements Store {
  private readonly memory: MemoryStore;
  /** Fallback spends by spend id, oldest first. */
  readonly journal = new Map<string, FallbackSpend>();
  /** The entries the journal's spends weigh on (see {@link MAX_FALLBACK_ENTRIES}). */
  private entries = 0;
  /** Calls refused because the journal was full. */
  refusedFull = 0;
  /** Something may be owed to the store (see `RedisFleet.owed`). */
  owed = false;
  /** Lockouts started here, by policy and caller key, until written into the store. */
  readonly lockouts = new Map<string, FallbackLockout>();

  constructor(
    private readonly owner: FallbackOwner,
    /** The fallback's clock: the store's (a custom clock) or Redis's as last estimated. */
    private readonly clock: () => number,
  ) {
    this.memory = new MemoryStore({ clock, maxKeys: 2 * MAX_FALLBACK_ENTRIES });
  }

  async consume(request: SpendRequest): Promise<SpendResult> {
    const shared = sharedLimits(request.limits, this.owner.view());
    if (shared === undefined) return this.refusal(request);
    const weight = entriesOf(request);
    if (request.algorithm !== 'concurrency' && !this.room(weight)) {
      this.refusedFull++;
      return this.refusal(request);
    }
    const result = await this.memory.consume({ ...request, limits: shared });
    if (!result.allowed && result.blockedUntil !== undefined) this.rememberLockouts(request);
    if (result.allowed) this.owed = true;
    if (result.allowed && result.spendId !== undefined && request.algorithm !== 'concurrency') {
      this.entries += weight;
      this.journal.set(result.spendId, {
        id: result.spendId,
        request: { ...request, block: undefined, deadlineAt: undefined, settles: undefined },
        at: result.at,
        shared,
        units: request.cost,
        charged: 0,
        adjusted: false,
        until: result.at + this.owner.lifetimeMs(request),
      });
    }
    return result;
  }

  async peek(request: SpendRequest): Promise<SpendResult> {
    const shared = sharedLimits(request.limits, this.owner.view());
    if (shared === undefined) return this.refusal(request);
    return this.memory.peek({ ...request, limits: shared });
  }

  async refund(request: RefundRequest): Promise<void> {
    const spend = request.spendId === undefined ? undefined : this.journal.get(request.spendId);
    await this.memory.refund({ ...request, limits: this.limitsOf(request, spend) });
    if (spend !== undefined) this.settle(spend, 0);
  }

  async adjust(request: AdjustRequest): Promise<void> {
    const spend = request.spendId === undefined ? undefined : this.journal.get(request.spendId);
    await this.memory.adjust({ ...request, limits: this.limitsOf(request, spend) });
    if (spend !== undefined && !spend.adjusted && spend.units > 0) {
      spend.adjusted = true;
      this.settle(spend, request.actualCost);
    }
  }

  private settle(spend: FallbackSpend, units: number): void {
    spend.units = units;
    if (spend.charged !== units && spend.charged > 0) {
      this.owed = true;
      this.owner.owes();
    }
  }

  extend(request: RefundRequest): Promise<boolean> {
    return this.memory.extend({ ...request, limits: this.limitsOf(request, undefined) });
  }

  reset(request: ResetRequest): Promise<void> {
    return this.memory.reset(request);
  }

  grant(request: GrantRequest): Promise<void> {
    return this.memory.grant(request);
  }

  /** The spends that owe the store something now (what they cost differs from what it holds). */
  *owing(): Generator<FallbackSpend> {
    const now = this.clock();
    for (const [id, spend] of this.journal) {
      if (spend.until < now) {
        this.forget(id, spend); // weighs on nothing any more, here or in the store
      } else if (spend.units !== spend.charged) {
        yield spend;
      }
    }
  }

  /** The lockouts not written into the store yet (those over by now go). */
  *lockoutsOwed(): Generator<FallbackLockout> {
    const now = this.clock();
    for (const [id, lockout] of this.lockouts) {
      if (lockout.until <= now) this.lockouts.delete(id);
      else if (!lockout.written) yield lockout;
    }
  }

  /** The lockouts the memory store holds on the keys of a call it refused with one. */
  private rememberLockouts(request: SpendRequest): void {
    for (const key of request.keys) {
      const held = this.memory.lockoutOf(request.policy, key);
      if (held === undefined) continue;
      const id = JSON.stringify([request.policy, key]);
      const known = this.lockouts.get(id);
      if (known !== undefined && known.until >= held.until) continue;
      if (known === undefined && this.lockouts.size >= MAX_FALLBACK_LOCKOUTS) continue;
      this.lockouts.set(id, { policy: request.policy, key, ...held, written: false });
      this.owed = true;
    }
  }

  /** Whether the journal has room for a spend on `weight` entries (spends past their life go). */
  private room(weight: number): boolean {
    if (this.entries + weight <= MAX_FALLBACK_ENTRIES) return true;
    const now = this.clock();
    // Oldest first, up to the first that still weighs: a full journal costs a refused call no
    // walk through the whole journal.
    for (const [id, spend] of this.journal) {
      if (this.entries + weight <= MAX_FALLBACK_ENTRIES || spend.until >= now) break;
      this.forget(id, spend);
    }
    return this.entries + weight <= MAX_FALLBACK_ENTRIES;
  }

  private forget(id: string, spend: FallbackSpend): void {
    this.journal.delete(id);
    this.entries -= entriesOf(spend.request);
  }

  private limitsOf(request: SpendRequest, spend: FallbackSpend | undefined): readonly LimitRule[] {
    return spend?.shared ?? sharedLimits(request.limits, this.owner.view()) ?? request.limits;
  }

  /** A refusal without a share: nothing is spent; try again after the next beat. */
  private refusal(request: SpendRequest): SpendResult {
    return {
      allowed: false,
      remaining: 0,
      limitIndex: 0,
      retryAfterMs: request.limits[0]!.windowMs,
      resetAfterMs: request.limits[0]!.windowMs,
      blockedKeyIndex: 0,
      at: this.clock(),
    };
  }
}

/** The entries a spend weighs on: a state per caller key and limit, and a ledger per caller key. */
function entriesOf(request: SpendRequest): number {
  return request.keys.length * (request.limits.length + 1);
}
