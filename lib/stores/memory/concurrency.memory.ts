import type { MemoryAlgorithm, SettleContext, StoredState } from './memory-algorithm';
import { slidingLogMemory, type SlidingLogState as LeaseState, units } from './sliding-log.memory';

/**
 * Leases in flight in memory; mirrors `lua/concurrency/*.lua`: decided as a sliding log whose
 * members are the units leased (a lease counts for `window` after it was taken or last extended),
 * released by removing its members whatever their instant, extended by moving them to now.
 */
export const concurrencyMemory: MemoryAlgorithm<LeaseState> & {
  /** Renews the spend's members still counting; the new state and how many were renewed. */
  extend(
    state: LeaseState,
    windowMs: number,
    spend: SettleContext,
  ): { next: StoredState<LeaseState>; renewed: number };
} = {
  owns: (value): value is LeaseState => slidingLogMemory.owns(value),
  evaluate: (state, rule, spend) => slidingLogMemory.evaluate(state, rule, spend),

  refund(state, { windowMs }, { cost, spendId }) {
    if (!spendId) return undefined;
    const ids = new Set(units(spendId, cost, 0, cost));
    const log = state.log.filter((member) => !ids.has(member.id));
    if (log.length === state.log.length) return undefined;
    if (log.length === 0) return null;
    return { state: { log }, expiresAt: Math.max(...log.map((m) => m.at)) + windowMs };
  },

  charge() {
    throw new Error('redlimit: a concurrency lease is released or extended, never adjusted');
  },

  extend(state, windowMs, { cost, spendId, now }) {
    const ids = new Set(spendId ? units(spendId, cost, 0, cost) : []);
    let renewed = 0;
    const log = state.log.map((member) => {
      if (!ids.has(member.id) || member.at <= now - windowMs || member.at >= now) return member;
      renewed += 1;
      return { id: member.id, at: now };
    });
    // Members that were already at `now` or later (a clock behind) count as renewed, unmoved.
    for (const member of state.log) {
      if (ids.has(member.id) && member.at >= now) renewed += 1;
    }
    log.sort((a, b) => a.at - b.at);
    return {
      next: { state: { log }, expiresAt: Math.max(...log.map((m) => m.at)) + windowMs },
      renewed,
    };
  },
};
