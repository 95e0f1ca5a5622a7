import type { AlgorithmDefinition } from './algorithm-definition';

/** A sliding log stores one member per unit spent: its limit bounds the memory of a key. */
export const MAX_SLIDING_LOG_LIMIT = 100_000;

/**
 * `sliding-log`: one entry per unit spent, named after its spend; exact, and bounded to
 * {@link MAX_SLIDING_LOG_LIMIT} per limit. Lua: `lua/sliding-log/`.
 */
export const slidingLogAlgorithm: AlgorithmDefinition<'sliding-log'> = {
  name: 'sliding-log',
  kind: 'rate',
  usesBurst: false,
  keepsSpendIds: true,
  lifetimeMs: ({ windowMs }) => windowMs,
  checkLimits({ limits, paths }) {
    limits.forEach((rule, index) => {
      if (rule.limit > MAX_SLIDING_LOG_LIMIT) {
        throw new RangeError(
          `${paths[index]!}.limit: a sliding log keeps one entry per unit, so its limit is at most ` +
            `${MAX_SLIDING_LOG_LIMIT}; got ${rule.limit} (use sliding-window for large limits)`,
        );
      }
    });
  },
};
