import type { MemoryAlgorithm } from './memory-algorithm';

/** One member per unit spent: the spend's id and instant, kept in order of instant. */
export interface SlidingLogState {
  readonly log: Array<{ readonly id: string; readonly at: number }>;
}

/**
 * Sliding log in memory; mirrors `lua/sliding-log/*.lua`. The log stays sorted by instant, so a
 * decision finds the window's start by binary search, and a spend appends in place and prunes
 * members that left the window in batches: O(log n) to decide, amortised O(cost) to spend.
 */
export const slidingLogMemory: MemoryAlgorithm<SlidingLogState> = {
  owns(value): value is SlidingLogState {
    return typeof value === 'object' && value !== null && 'log' in value;
  },

  evaluate(state, { limit, windowMs }, { cost, now, spendId }) {
    const log = state?.log ?? [];
    const first = firstAfter(log, now - windowMs); // members at > now - window count
    const count = log.length - first;
    const fits = count + cost <= limit;
    return {
      fits,
      room: limit - count,
      // The (count + cost - limit)-th oldest counted member must leave the window first.
      waitMs: fits ? 0 : log[first + count + cost - limit - 1]!.at + windowMs - now,
      resetMs(spent) {
        if (spent) return windowMs;
        return count === 0 ? 0 : log[log.length - 1]!.at + windowMs - now;
      },
      next() {
        const kept = state?.log ?? [];
        // Prune what no longer counts, in batches: stale members before `first` are never counted,
        // and removing them one at a time from the front would cost O(n) per spend.
        if (first >= 1_024 || first * 2 >= kept.length) kept.splice(0, first);
        const id = spendId ?? '';
        const added = Array.from({ length: cost }, (_, n) => ({
          id: cost === 1 ? id : `${id}.${n + 1}`,
          at: now,
        }));
        // In order of instant even if the clock stepped back.
        kept.splice(firstAfter(kept, now), 0, ...added);
        return { state: { log: kept }, expiresAt: kept[kept.length - 1]!.at + windowMs };
      },
    };
  },

  refund(state, { limit, windowMs }, { cost, spendId, at, now, keep, reserved }) {
    if (!spendId || at <= now - windowMs) return undefined; // its members no longer count
    const ids = new Set(units(spendId, reserved, keep, stored(limit, reserved, keep, cost)));
    const log = state.log.filter((member) => !ids.has(member.id));
    if (log.length === state.log.length) return undefined;
    if (log.length === 0) return null;
    return { state: { log }, expiresAt: log[log.length - 1]!.at + windowMs };
  },

  grant(state, { windowMs }, { cost }) {
    // The newest `cost` members go, in a sorted set's order (by instant, then by name), as
    // ZREMRANGEBYRANK takes them in lua/sliding-log/refund.lua.
    const order = state.log
      .map((member, i) => ({ member, i }))
      .sort((a, b) =>
        a.member.at !== b.member.at
          ? a.member.at - b.member.at
          : a.member.id < b.member.id
            ? -1
            : a.member.id > b.member.id
              ? 1
              : 0,
      );
    const gone = new Set(order.slice(Math.max(0, order.length - cost)).map(({ i }) => i));
    if (gone.size === 0) return undefined;
    const log = state.log.filter((_, i) => !gone.has(i));
    if (log.length === 0) return null;
    return { state: { log }, expiresAt: log[log.length - 1]!.at + windowMs };
  },

  charge(state, { limit, windowMs }, { cost, spendId, at, now, keep, reserved }) {
    if (!spendId || at <= now - windowMs) return undefined; // they would no longer count
    const count = stored(limit, reserved, keep, cost);
    if (count === 0) return undefined; // the spend already fills the log until it leaves
    const before = state?.log ?? [];
    const added = units(spendId, reserved, keep, count).map((id) => ({ id, at }));
    const i = firstAfter(before, at);
    const log = before.slice(0, i).concat(added, before.slice(i));
    return { state: { log }, expiresAt: log[log.length - 1]!.at + windowMs };
  },
};

/**
 * How many of units `keep + 1 … keep + cost` are stored: a spend keeps at most max(limit,
 * reserved) entries, since entries beyond the limit at one instant never change a decision (the
 * log is full until they leave together). Mirrors `lastStored` in `lua/sliding-log/refund.lua`.
 */
function stored(limit: number, reserved: number, keep: number, cost: number): number {
  return Math.max(0, Math.min(keep + cost, Math.max(limit, reserved)) - keep);
}

/** Names of units `keep + 1 … keep + count` of a spend of `reserved` units (see consume). */
export function units(spendId: string, reserved: number, keep: number, count: number): string[] {
  return Array.from({ length: count }, (_, n) =>
    reserved === 1 && keep + n === 0 ? spendId : `${spendId}.${keep + n + 1}`,
  );
}

/** Index of the first member with `at > instant` in a log sorted by instant. */
function firstAfter(log: ReadonlyArray<{ readonly at: number }>, instant: number): number {
  let low = 0;
  let high = log.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (log[mid]!.at > instant) high = mid;
    else low = mid + 1;
  }
  return low;
}
