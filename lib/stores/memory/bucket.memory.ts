import type { LimitRule } from '../../core/policy';
import type { MemoryAlgorithm, StoredState } from './memory-algorithm';

/**
 * Backlog `b` (units of 1/window token) as of instant `at`, the start of the busy period, the
 * smallest backlog seen just before a later spend of that period (-1: none), the latest spend, and
 * those two as they were before the latest spend (see `lua/lib/bucket.lua`).
 */
interface BucketState {
  readonly b: number;
  readonly at: number;
  readonly busyStart: number;
  readonly m: number;
  readonly lastAt: number;
  readonly prevM: number;
  readonly prevLastAt: number;
}

const EMPTY = { b: 0, busyStart: -1, m: -1, lastAt: -1, prevM: -1, prevLastAt: -1 };

/**
 * Token bucket and GCRA in memory (one state machine; Redis stores them two ways); mirrors
 * `lua/lib/bucket.lua`.
 */
export const bucketMemory: MemoryAlgorithm<BucketState> = {
  owns(value): value is BucketState {
    return typeof value === 'object' && value !== null && 'busyStart' in value;
  },

  evaluate(state, rule, { cost, now }) {
    const { capacity, ...s } = load(state, rule, now);
    const units = cost * rule.windowMs;
    const fits = s.b + units <= capacity;
    return {
      fits,
      room: floorDiv(capacity - s.b, rule.windowMs),
      waitMs: fits ? 0 : ceilDiv(s.b + units - capacity, rule.limit),
      resetMs: (spent) => ceilDiv(spent ? s.b + units : s.b, rule.limit),
      next() {
        const spent = { b: s.b + units, at: now, lastAt: now, prevM: s.m, prevLastAt: s.lastAt };
        if (s.b === 0) {
          return stored({ ...spent, busyStart: now, m: -1, prevM: -1, prevLastAt: -1 }, rule);
        }
        const m = s.m < 0 || s.b < s.m ? s.b : s.m;
        // (a clock behind the period's start: this spend still belongs to the period)
        return stored({ ...spent, busyStart: Math.min(s.busyStart, now), m }, rule);
      },
    };
  },

  refund(state, rule, { cost, now, at, keep }) {
    const s = load(state, rule, now);
    if (s.b === 0 || at < s.busyStart) return undefined;
    const latest = at === s.lastAt; // (not >=: after the clock stepped back, a later `at` is no proof)
    let back = Math.min(cost * rule.windowMs, s.b);
    if (!latest && s.m >= 0) back = Math.min(back, s.m); // an earlier spend: bounded by history
    if (back <= 0) return undefined;
    const b = s.b - back;
    if (b <= 0) return null;
    const shift = (v: number) => (v >= 0 ? Math.max(0, v - back) : -1);
    const { busyStart, m, lastAt, prevM, prevLastAt } = s;
    if (latest && keep === 0) {
      // As if it never happened: the running minimum and latest spend from before it.
      return stored(
        { b, at: now, busyStart, m: prevM, lastAt: prevLastAt, prevM, prevLastAt },
        rule,
      );
    }
    if (latest) {
      // Still the latest spend, smaller: the points before it are as they were.
      return stored({ b, at: now, busyStart, m, lastAt, prevM, prevLastAt }, rule);
    }
    return stored(
      { b, at: now, busyStart, m: shift(m), lastAt, prevM: shift(prevM), prevLastAt },
      rule,
    );
  },

  grant(state, rule, { cost, now }) {
    const s = load(state, rule, now);
    if (s.b === 0) return undefined;
    // Only the current point drops (see lua/lib/bucket.lua): the running minimums stay.
    const b = s.b - Math.min(cost * rule.windowMs, s.b);
    if (b <= 0) return null;
    const { busyStart, m, lastAt, prevM, prevLastAt } = s;
    return stored({ b, at: now, busyStart, m, lastAt, prevM, prevLastAt }, rule);
  },

  charge(state, rule, { cost, now, at }) {
    const { b, busyStart, m, lastAt, prevM, prevLastAt } = load(state, rule, now);
    // Full since the spend: it weighs on nothing, as for a refund.
    if (b === 0 || at < busyStart) return undefined;
    // Not full since: every point after it rises by exactly the extra.
    const next = { b: b + cost * rule.windowMs, at: now, busyStart, m, lastAt, prevM, prevLastAt };
    return stored(next, rule);
  },
};

function load(state: BucketState | undefined, { limit, windowMs, burst }: LimitRule, now: number) {
  const capacity = burst * windowMs;
  // (a backlog above capacity is a debt: a spend adjusted up)
  const b = state ? state.b - (now - state.at) * limit : 0;
  if (!state || b <= 0) return { ...EMPTY, capacity };
  return { ...state, b, capacity };
}

function stored(state: BucketState, { limit }: LimitRule): StoredState<BucketState> {
  return { state, expiresAt: state.at + ceilDiv(state.b, limit) };
}

function floorDiv(x: number, y: number): number {
  let q = Math.floor(x / y);
  if (q * y > x) q -= 1;
  else if ((q + 1) * y <= x) q += 1;
  return q;
}

function ceilDiv(x: number, y: number): number {
  const q = floorDiv(x, y);
  return q * y < x ? q + 1 : q;
}
