import { monotonicNow } from '../core/clock.util';
import type { LimitRule } from '../core/policy';
import { newSpendTag } from './spend-id.util';

/**
 * How often a process announces itself in its fleet while a `failMode: 'memory'` limiter uses it
 * (RedisStore option `fleetBeatMs`).
 */
export const FLEET_BEAT_MS = 5_000;

/**
 * How long a process stays in its fleet after its latest beat (RedisStore option `fleetTtlMs`):
 * how long the fallback can last into an outage (past it, this process may no longer be counted
 * by the others, so it takes no share), and how long a process that died without leaving still
 * counts (the others' shares stay smaller meanwhile, and a newcomer waits for it to lapse).
 */
export const FLEET_TTL_MS = 600_000;

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
  /**
   * The oldest latest answered beat of the other members (the store's clock; -1: no other member;
   * 0: a member none of whose beats was answered yet, as far as the store knows).
   */
  readonly oldestOther: number;
}

/**
 * What this process last saw of its fleet (see `RedisStore.fleet`): the processes that share the
 * store's prefix and beat within the last `fleetTtlMs`.
 */
export interface FleetView {
  /** Live members when it was seen, this process included. */
  readonly size: number;
  /** This process's place among them (0-based). */
  readonly rank: number;
  /**
   * True while this process may take a share: every other member has been answered a beat that
   * ran after it joined (so every other member's view counts it, and the shares add up to no more
   * than the limit; a beat whose reply was lost does not count), and
   * its own latest answered beat is less than `fleetTtlMs` old (so no member can have dropped it
   * since). False before that, for a process that joined (or came back) after another member's
   * latest beat, and once the view has outlived this process's place in the fleet.
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
 * This process's membership of its fleet: a beat every `beatMs` (off the decision path, on a
 * timer that never holds the process open) while started, the last view it answered, and whether
 * this process may take a share (see {@link FleetView.established}). A beat that fails keeps the
 * last view: it is what the fallback divides by while the store is away, until it lapses.
 */
export class FleetMembership {
  /** This process's name in the fleet: random, with the pid for whoever reads the set. */
  readonly member = `${process.pid}:${newSpendTag()}`;
  private view?: Omit<FleetView, 'established'>;
  /** Every other member had been answered a beat since this one joined, as of the latest one. */
  private seenByAll = false;
  /** When this process's current membership began (the store's clock; reset when it lapsed). */
  private joinedAt?: number;
  /** When this process's latest answered beat ran (the store's clock). */
  private answeredAt?: number;
  private timer?: ReturnType<typeof setInterval>;
  private beating?: Promise<void>;

  constructor(
    /**
     * One beat in the store (`ttlMs` 0: leave), with when this process's latest answered beat ran
     * (the store's clock): what the others wait for before a newcomer counts as seen by it.
     */
    private readonly send: (
      member: string,
      ttlMs: number,
      answeredAt: number | undefined,
    ) => Promise<FleetBeat>,
    /** Runs after every beat that the store answered (the store is back: reconcile). */
    private readonly onAnswer: () => Promise<void>,
    /** The beat interval (ms). */
    private readonly beatMs = FLEET_BEAT_MS,
    /** How long a member stays in the fleet after its latest beat (ms). */
    private readonly ttlMs = FLEET_TTL_MS,
  ) {}

  /** The fleet as last seen, or undefined before any beat was answered. */
  get current(): FleetView | undefined {
    const view = this.view;
    if (view === undefined) return undefined;
    // (seenAt: when the beat was sent, no later than Redis recorded it: a margin)
    const established = this.seenByAll && monotonicNow() - view.seenAt < this.ttlMs;
    return { ...view, established };
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
    this.joinedAt = undefined;
    this.seenByAll = false;
    this.answeredAt = undefined;
    await this.send(this.member, 0, undefined);
  }

  private async beatOnce(): Promise<void> {
    const sentAt = monotonicNow();
    const beat = await this.send(this.member, this.ttlMs, this.answeredAt);
    this.answeredAt = beat.now; // sent with the next beat: this view counts whoever joined before
    if (beat.joined || this.joinedAt === undefined) this.joinedAt = beat.now;
    // Strictly after: a beat in the same millisecond may have run before this one joined.
    this.seenByAll = beat.oldestOther < 0 || beat.oldestOther > this.joinedAt;
    this.view = { size: beat.size, rank: beat.rank, seenAt: sentAt };
    await this.onAnswer();
  }
}
