import { type MemoryAlgorithm, later } from './memory-algorithm';

/** Count of the window ending at `windowEnd`. */
interface FixedWindowState {
  readonly windowEnd: number;
  readonly count: number;
}

/** Fixed window in memory; mirrors `lua/fixed-window/*.lua`. */
export const fixedWindowMemory: MemoryAlgorithm<FixedWindowState> = {
  owns(value): value is FixedWindowState {
    return typeof value === 'object' && value !== null && 'windowEnd' in value && 'count' in value;
  },

  evaluate(state, { limit, windowMs }, { cost, now }) {
    const windowEnd = (Math.floor(now / windowMs) + 1) * windowMs;
    if (state && state.windowEnd > windowEnd) return later(state.windowEnd - windowMs);
    const count = state?.windowEnd === windowEnd ? state.count : 0;
    return {
      fits: count + cost <= limit,
      room: limit - count,
      waitMs: windowEnd - now,
      resetMs: (spent) => (spent || count > 0 ? windowEnd - now : 0),
      next: () => ({ state: { windowEnd, count: count + cost }, expiresAt: windowEnd }),
    };
  },

  refund(state, { windowMs }, { cost, at, now }) {
    const chargedEnd = (Math.floor(at / windowMs) + 1) * windowMs;
    if (now >= chargedEnd || state.windowEnd !== chargedEnd) return undefined;
    if (state.count <= cost) return null;
    return {
      state: { windowEnd: state.windowEnd, count: state.count - cost },
      expiresAt: chargedEnd,
    };
  },

  grant(state, rule, { cost, now }) {
    return this.refund(state, rule, { cost, now, at: now, keep: 0, reserved: cost });
  },

  charge(state, { windowMs }, { cost, at, now }) {
    const chargedEnd = (Math.floor(at / windowMs) + 1) * windowMs;
    if (now >= chargedEnd || (state && state.windowEnd !== chargedEnd)) return undefined;
    return {
      state: { windowEnd: chargedEnd, count: (state?.count ?? 0) + cost },
      expiresAt: chargedEnd,
    };
  },
};
