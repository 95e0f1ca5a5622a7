import type { MemoryAlgorithm } from './memory-algorithm';

/** One member per unit spent: the spend's id and instant, oldest first. */
interface SlidingLogState {
  readonly log: ReadonlyArray<{ readonly id: string; readonly at: number }>;
}

/** Sliding log in memory; mirrors `lua/sliding-log/*.lua`. */
export const slidingLogMemory: MemoryAlgorithm<SlidingLogState> = {
  owns(value): value is SlidingLogState {
    return typeof value === 'object' && value !== null && 'log' in value;
  },

  evaluate(state, { limit, windowMs }, { cost, now, spendId }) {
    const since = now - windowMs;
    const log = state?.log ?? [];
    const counted = log.filter((member) => member.at > since);
    const count = counted.length;
    const fits = count + cost <= limit;
    return {
      fits,
      room: limit - count,
      waitMs: fits ? 0 : counted[count + cost - limit - 1]!.at + windowMs - now,
      resetMs(spent) {
        if (spent) return windowMs;
        return count === 0 ? 0 : counted[count - 1]!.at + windowMs - now;
      },
      next() {
        const id = spendId ?? '';
        const added = Array.from({ length: cost }, (_, n) => ({
          id: cost === 1 ? id : `${id}.${n + 1}`,
          at: now,
        }));
        return { state: { log: [...counted, ...added] }, expiresAt: now + windowMs };
      },
    };
  },

  refund(state, { windowMs }, { cost, spendId, at, now }) {
    if (!spendId || at <= now - windowMs) return undefined; // its members no longer count
    const ids = new Set(
      Array.from({ length: cost }, (_, n) => (cost === 1 ? spendId : `${spendId}.${n + 1}`)),
    );
    const log = state.log.filter((member) => !ids.has(member.id));
    if (log.length === state.log.length) return undefined;
    if (log.length === 0) return null;
    return { state: { log }, expiresAt: log[log.length - 1]!.at + windowMs };
  },
};
