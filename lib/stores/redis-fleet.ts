import { type FleetBeat, FleetMembership, type FleetView } from './fleet';
import { type FallbackSpend, FleetFallback } from './fleet-fallback';
import { stateLifetimeMs } from './state-lifetime.util';

/** Spends charged into the store at once when it is back (each one script run). */
const RECONCILE_PARALLEL = 32;

/** How a RedisStore's fleet reaches Redis. */
export interface FleetPort {
  /** One heartbeat (`ttlMs` 0: leave). */
  beat(member: string, ttlMs: number): Promise<FleetBeat>;
  /**
   * Makes a fallback spend weigh `to` units in the store instead of `from` (an adjustment of a
   * compensation: no ledger; charged where it was made, if that still counts, and not on a key
   * reset since). Resolves with the number of states changed.
   */
  charge(spend: FallbackSpend, from: number, to: number): Promise<number>;
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
interface FallbackCounts {
  /** Fallback spends that owe the store something (not reconciled yet). */
  readonly owing: number;
  /** Fallback spends charged into the store since the store was made. */
  readonly reconciled: number;
  /** Calls refused because the journal was full. */
  readonly refusedFull: number;
}

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

  constructor(
    private readonly port: FleetPort,
    /** The fallback's clock: the store's, or Redis's as last estimated. */
    private readonly clock: () => number,
    beatMs: number,
    ttlMs: number,
  ) {
    this.membership = new FleetMembership(
      (member, ttl) => port.beat(member, ttl),
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
    do {
      this.again = false;
      await this.reconcileOnce();
    } while (this.again);
  }

  private async reconcileOnce(): Promise<void> {
    const fallback = this.fallbackStore;
    if (fallback === undefined) return;
    const owing = [...fallback.owing()];
    for (let i = 0; i < owing.length; i += RECONCILE_PARALLEL) {
      await Promise.all(
        owing.slice(i, i + RECONCILE_PARALLEL).map(async (spend) => {
          const from = spend.charged;
          const to = spend.units;
          await this.port.charge(spend, from, to);
          spend.charged = to;
          if (from === 0) this.reconciled++;
        }),
      );
    }
  }
}
