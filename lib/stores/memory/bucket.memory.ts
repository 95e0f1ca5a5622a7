import type { LimitRule } from '../../core/policy';
import type { MemoryAlgorithm, StoredState } from './memory-algorithm';

/**
 * Backlog `b` (units of 1/window token) as of instant `at`, the start of the busy period, the
 * smallest backlog seen just before a later spend of that period (-1: none), the latest spend.
 */
interface BucketState {
  readonly b: number;
  readonly at: number;
  readonly busyStart: number;
  readonly m: number;
  readonly lastAt: number;
}

/**
 * Token bucket and GCRA in memory (one state machine; Redis stores them two ways); mirrors
 * `lua/lib/bucket.lua`.
 */
export const bucketMemory: MemoryAlgorithm<BucketState> = {
  owns(value): value is BucketState {
    return typeof value === 'object' && value !== null && 'busyStart' in value;
  },

  evaluate(state, rule, { cost, now }) {
    const { b, busyStart, m, capacity } = load(state, rule, now);
    const units = cost * rule.windowMs;
    const fits = b + units <= capacity;
    return {
      fits,
      room: floorDiv(capacity - b, rule.windowMs),
      waitMs: fits ? 0 : ceilDiv(b + units - capacity, rule.limit),
      resetMs: (spent) => ceilDiv(spent ? b + units : b, rule.limit),
      next() {
        if (b === 0) return stored({ b: units, at: now, busyStart: now, m: -1, lastAt: now }, rule);
        const lowest = m < 0 || b < m ? b : m;
        return stored({ b: b + units, at: now, busyStart, m: lowest, lastAt: now }, rule);
      },
    };
  },

  refund(state, rule, { cost, now, at }) {
    const loaded = load(state, rule, now);
    const { b, busyStart, lastAt } = loaded;
    let { m } = loaded;
    if (b === 0 || at < busyStart) return undefined;
    let back = Math.min(cost * rule.windowMs, b);
    if (at < lastAt && m >= 0) back = Math.min(back, m); // an earlier spend: bounded by history
    if (back <= 0) return undefined;
    if (m >= 0) m = Math.max(0, m - back);
    return b - back <= 0 ? null : stored({ b: b - back, at: now, busyStart, m, lastAt }, rule);
  },
};

function load(state: BucketState | undefined, { limit, windowMs, burst }: LimitRule, now: number) {
  const capacity = burst * windowMs;
  const b = state ? Math.min(capacity, state.b - (now - state.at) * limit) : 0;
  if (!state || b <= 0) return { b: 0, busyStart: -1, m: -1, lastAt: -1, capacity };
  return { b, busyStart: state.busyStart, m: state.m, lastAt: state.lastAt, capacity };
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
