import { ALGORITHM_DEFINITIONS } from '../core/algorithms/algorithm.registry';
import { type FleetBeat, FleetMembership, type FleetView } from './fleet';
import type { LimitRule } from '../core/policy';
import { bounded } from './bounded.util';
import type { SpendRequest } from '../core/store';
import { type FallbackLockout, type FallbackSpend, FleetFallback } from './fleet-fallback';
import { stateLifetimeMs } from './state-lifetime.util';

/** Spends charged into the store at once when it is back (each one script run). */
const RECONCILE_PARALLEL = 32;

/** How a RedisStore's fleet reaches Redis. */
export interface FleetPort {
  /** One heartbeat (`ttlMs` 0: leave), with when this member's latest answered beat ran. */
  beat(member: string, ttlMs: number, answeredAt: number | undefined): Promise<FleetBeat>;
  /**
   * Makes a fallback spend weigh `to` units in the store instead of `from` (an adjustment of a
   * compensation: no ledger; charged where it was made, if that still counts, and not on a key
   * reset since). Resolves with the number of states changed.
   */
  charge(spend: FallbackSpend, from: number, to: number): Promise<number>;
  /** Writes a lockout the fallback started (unless the store holds one that ends later). */
  lock(lockout: FallbackLockout): Promise<void>;
}

/** What a RedisStore's fleet looks like from this process (see `RedisStore.fleet`). */
export interface FleetState {
  /** The fleet as last seen; undefined before the first heartbeat Redis answered. */
  readonly view: FleetView | undefined;
  /** Fallback spends that owe the store something (not reconciled yet). */
  readonly owing: number;
  /** Fallback spends charged into the store since the store was made. */
  readonly reconciled: number;
  /** Calls the fallback refused because its journal was full (see `MAX_FALLBACK_ENTRIES`). */
  readonly refusedFull: number;
}

/** Counts of what the fallback's journal did. */
type FallbackCounts = Omit<FleetState, 'view'>;

/**
 * A RedisStore's fleet: its membership (heartbeats, started by the first `failMode: 'memory'`
 * limiter), its one fleet-aware fallback, and the reconciliation of what the fallback allowed into
 * Redis after each beat that Redis answered.
 */
export class RedisFleet {
  readonly membership: FleetMembership;
  private fallbackStore?: FleetFallback;
  private reconciling?: Promise<void>;
  private reconciled = 0;
  private again = false;
  /** The longest wait for one of the fleet's store calls (ms). */
  private readonly callMs: number;

  constructor(
    private readonly port: FleetPort,
    /** The fallback's clock: the store's, or Redis's as last estimated. */
    private readonly clock: () => number,
    beatMs: number,
    ttlMs: number,
  ) {
    // Each call bounded (see `bounded`): a beat sent again only refreshes this process's place; a
    // charge or lockout whose reply never came is sent again at the next pass (a lockout changes
    // nothing twice; a charge finds its charge marker and changes nothing twice either).
    this.callMs = Math.max(2 * beatMs, 2_000);
    this.membership = new FleetMembership(
      (member, ttl, answeredAt) =>
        bounded(port.beat(member, ttl, answeredAt), this.callMs, 'the fleet heartbeat'),
      () => this.reconcile(),
      beatMs,
      ttlMs,
    );
  }

  /** The fallback (created, and the heartbeat started, on first call). */
  fallback(): FleetFallback {
    if (this.fallbackStore === undefined) {
      this.fallbackStore = new FleetFallback(
        {
          view: () => this.membership.current,
          lifetimeMs: (request) => stateLifetimeMs(request.algorithm, request.limits),
          owes: () => void this.reconcile().catch(() => undefined),
        },
        this.clock,
      );
      this.membership.start();
    }
    return this.fallbackStore;
  }

  /**
   * Whether the fallback may owe the store something (it allowed a spend, started a lockout or
   * had a charged spend refunded since the last reconciliation that found nothing owing): one
   * read per decision answered.
   */
  get owed(): boolean {
    return this.fallbackStore?.owed === true;
  }

  /**
   * Reconciles now, not at the next beat: the store answered a decision, so it is back, and
   * every decision it makes before the fallback's spends are charged into it counts without them.
   */
  kick(): void {
    if (this.reconciling === undefined) void this.reconcile().catch(() => undefined);
  }

  /** The fleet as last seen. */
  get view(): FleetView | undefined {
    return this.membership.current;
  }

  /** What the fallback's journal holds and did. */
  get counts(): FallbackCounts {
    const journal = this.fallbackStore;
    let owing = 0;
    if (journal)
      for (const spend of journal.journal.values()) if (spend.units !== spend.charged) owing++;
    return { owing, reconciled: this.reconciled, refusedFull: journal?.refusedFull ?? 0 };
  }

  /**
   * Charges what the fallback allowed (less what was refunded since) into the store, each spend
   * in the window where it was made; joined to a reconciliation under way. Rejects when the store
   * fails (what is left is charged after a later beat).
   */
  reconcile(): Promise<void> {
    if (this.reconciling !== undefined) {
      this.again = true; // what changed since it began is charged in another pass
      return this.reconciling;
    }
    this.reconciling = this.reconcileAll().finally(() => (this.reconciling = undefined));
    return this.reconciling;
  }

  private async reconcileAll(): Promise<void> {
    const fallback = this.fallbackStore;
    do {
      this.again = false;
      if (fallback !== undefined) fallback.owed = false; // what is owed from here on sets it again
      try {
        await this.reconcileOnce();
      } catch (error) {
        if (fallback !== undefined) fallback.owed = true;
        throw error;
      }
    } while (this.again);
  }

  private async reconcileOnce(): Promise<void> {
    const fallback = this.fallbackStore;
    if (fallback === undefined) return;
    const owing = [...fallback.owing()];
    // A bucket's spends are charged together, per caller key: apart, each would drain from its
    // own instant as if the others had not been made.
    const buckets = owing.filter(
      (s) =>
        ALGORITHM_DEFINITIONS[s.request.algorithm].usesBurst &&
        s.charged === 0 &&
        s.chargedAt === undefined,
    );
    if (buckets.length > 0) await this.chargeBuckets(buckets);
    const inBuckets = new Set(buckets);
    await inBatches([...fallback.lockoutsOwed()], async (lockout) => {
      await bounded(this.port.lock(lockout), this.callMs, 'a fallback lockout');
      lockout.written = true;
    });
    // Newest first: the spends of the window under way are the ones that Redis's own decisions,
    // made again from now on, must see (a spend of a window over by now weighs on nothing).
    const rest = owing.filter((s) => !inBuckets.has(s)).reverse();
    await inBatches(rest, async (spend) => {
      const from = spend.charged;
      const to = spend.units;
      await bounded(this.port.charge(spend, from, to), this.callMs, 'a fallback charge');
      spend.charged = to;
      if (from === 0) this.reconciled++;
    });
  }

  /**
   * Token-bucket and GCRA spends never charged yet: per policy and caller key, the backlog they
   * left together at the latest one's instant (a queue drained at each limit's rate, spends in
   * time order; whole tokens, rounded up), charged as one spend made then (the bucket drains it to
   * the present); each then stands charged there, for a later refund or adjustment to go to.
   */
  private async chargeBuckets(spends: readonly FallbackSpend[]): Promise<void> {
    const now = this.clock();
    const groups = new Map<
      string,
      { request: SpendRequest; key: string; spends: FallbackSpend[] }
    >();
    for (const spend of spends) {
      if (spend.units === 0) continue;
      for (const key of spend.request.keys) {
        const { policy, algorithm, limits } = spend.request;
        const id = JSON.stringify([policy, algorithm, limits, key]);
        let group = groups.get(id);
        if (group === undefined)
          groups.set(id, (group = { request: spend.request, key, spends: [] }));
        group.spends.push(spend);
      }
    }
    await inBatches([...groups.values()], async ({ request, key, spends: made }) => {
      made.sort((a, b) => a.at - b.at);
      // Charged as made at the latest spend's instant, with the backlog they left then: the
      // store drains it to the present, and a charge sent again is the same charge.
      const last = made[made.length - 1]!.at;
      let tokens = 0;
      for (const rule of request.limits) tokens = Math.max(tokens, backlog(made, rule, last));
      if (tokens === 0) return;
      const charge: FallbackSpend = {
        // Its charge marker is this charge's: named after the latest spend, whose instant it is
        // charged at (the same charge sent again finds it; one at a later instant, after more
        // spends, is another charge: the marker of an earlier instant would take the backlog
        // drained since as still there), never after a spend's own (a refund of that spend alone
        // would read the whole backlog there as what it weighs, and give it all back).
        id: `${made[made.length - 1]!.id}:backlog`,
        request: { ...request, keys: [key], cost: tokens },
        at: last,
        // Not on a key reset after the latest spend; one between them leaves the whole backlog
        // charged (the spends before it with it: a cost, where dropping it gave budget back).
        markAt: last,
        shared: made[0]!.shared,
        units: tokens,
        charged: 0,
        adjusted: false,
        until: last,
      };
      await bounded(this.port.charge(charge, 0, tokens), this.callMs, 'a fallback charge');
      for (const spend of made) spend.chargedAt = last;
    });
    for (const spend of spends) {
      spend.chargedAt ??= now;
      spend.charged = spend.units;
      if (spend.units > 0) this.reconciled++;
    }
  }
}

/**
 * What spends (in time order) leave in a bucket of `rule` at `now`, in whole tokens (rounded up):
 * each adds its units, and the backlog drains at `limit` per `windowMs` while it is not empty.
 */
function backlog(spends: readonly FallbackSpend[], rule: LimitRule, now: number): number {
  const rate = rule.limit / rule.windowMs;
  let queued = 0;
  let last = spends[0]!.at;
  for (const spend of spends) {
    queued = Math.max(0, queued - (spend.at - last) * rate) + spend.units;
    last = spend.at;
  }
  const left = queued - Math.max(0, now - last) * rate;
  return left <= 1e-9 ? 0 : Math.ceil(left - 1e-9);
}

/** Runs `each` over `items`, {@link RECONCILE_PARALLEL} at a time. */
async function inBatches<T>(items: readonly T[], each: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += RECONCILE_PARALLEL) {
    await Promise.all(items.slice(i, i + RECONCILE_PARALLEL).map(each));
  }
}
