import { monotonicNow } from '../core/clock.util';
import type { LimitRule } from '../core/policy';
import { newSpendTag } from './spend-id.util';

/**
 * How often a process announces itself in its fleet while a `failMode: 'memory'` limiter uses it
 * (RedisStore option `fleetBeatMs`); an announcement lasts three beats.
 */
export const FLEET_BEAT_MS = 5_000;

/** What a beat answered: the live fleet's size and this process's place in it. */
export interface FleetBeat {
  /** Live members (this process included). */
  readonly size: number;
  /** This process's place among them (0-based, in byte order of their names). */
  readonly rank: number;
  /** The store's clock when it answered (ms since the epoch). */
  readonly now: number;
  /** True when this process was not in the fleet before this beat (it joined or came back). */
  readonly joined: boolean;
}

/**
 * What this process last saw of its fleet (see `RedisStore.fleet`): the processes that share the
 * store's prefix and announced themselves within the last three beats.
 */
export interface FleetView {
  /** Live members when it was seen, this process included. */
  readonly size: number;
  /** This process's place among them (0-based). */
  readonly rank: number;
  /**
   * True once this process has been in the fleet for a whole beat interval: every member that
   * beat since has counted it, so it can take a share without the shares adding up to more than
   * the limit. A process that joined (or came back) later takes none.
   */
  readonly established: boolean;
  /** When it was seen (this process's monotonic clock, ms). */
  readonly seenAt: number;
}

/**
 * One limit's share for this process while the store fails: `floor(limit / size)`, one more for
 * the first `limit % size` members, so the shares of a fleet that agrees on its size add up to
 * the limit exactly. 0 (refuse) with no view of the fleet, or before this process is established.
 */
export function shareOf(limit: number, view: FleetView | undefined): number {
  if (view === undefined || !view.established) return 0;
  const base = Math.floor(limit / view.size);
  return base + (view.rank < limit % view.size ? 1 : 0);
}

/**
 * A policy's limits cut to this process's share (limit and burst alike), or undefined when some
 * limit's share is 0: the fallback then refuses every call of the policy.
 */
export function sharedLimits(
  limits: readonly LimitRule[],
  view: FleetView | undefined,
): readonly LimitRule[] | undefined {
  const shared: LimitRule[] = [];
  for (const rule of limits) {
    const limit = shareOf(rule.limit, view);
    const burst = shareOf(rule.burst, view);
    if (limit === 0 || burst === 0) return undefined;
    shared.push({ limit, windowMs: rule.windowMs, burst });
  }
  return shared;
}

/**
 * This process's membership of its fleet: a beat every `beatMs` (off the decision
 * path, on a timer that never holds the process open) while started, the last view it answered,
 * and whether this process has been a member long enough to take a share. A beat that fails keeps
 * the last view: it is what the fallback divides by while the store is away.
 */
export class FleetMembership {
  /** This process's name in the fleet: random, with the pid for whoever reads the set. */
  readonly member = `${process.pid}:${newSpendTag()}`;
  private view?: FleetView;
  /** When this process's current membership began (monotonic ms; reset when it lapsed). */
  private memberSince?: number;
  private timer?: ReturnType<typeof setInterval>;
  private beating?: Promise<void>;

  constructor(
    /** One beat in the store (`ttlMs` 0: leave). */
    private readonly send: (member: string, ttlMs: number) => Promise<FleetBeat>,
    /** Runs after every beat that the store answered (the store is back: reconcile). */
    private readonly onAnswer: () => Promise<void>,
    /** The beat interval (ms); an announcement lasts three. */
    private readonly beatMs = FLEET_BEAT_MS,
  ) {}

  /** The fleet as last seen, or undefined before any beat was answered. */
  get current(): FleetView | undefined {
    return this.view;
  }

  /** Starts beating (the first beat at once); idempotent. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.beat().catch(() => undefined), this.beatMs);
    this.timer.unref();
    void this.beat().catch(() => undefined);
  }

  /** One beat now (joined to one under way); rejects when the store fails (the view stays). */
  beat(): Promise<void> {
    this.beating ??= this.beatOnce().finally(() => (this.beating = undefined));
    return this.beating;
  }

  /** Stops beating and leaves the fleet (the others' next beats no longer count this process). */
  async leave(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.view = undefined;
    this.memberSince = undefined;
    await this.send(this.member, 0);
  }

  private async beatOnce(): Promise<void> {
    const sentAt = monotonicNow();
    const beat = await this.send(this.member, 3 * this.beatMs);
    if (beat.joined || this.memberSince === undefined) this.memberSince = sentAt;
    this.view = {
      size: beat.size,
      rank: beat.rank,
      // Members beat every interval: one that saw the fleet before this process joined has beaten
      // since (and counted it) when a whole interval has passed.
      established: sentAt - this.memberSince >= this.beatMs,
      seenAt: sentAt,
    };
    await this.onAnswer();
  }
}
