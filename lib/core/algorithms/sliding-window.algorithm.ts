import type { AlgorithmDefinition } from './algorithm-definition';

/**
 * `sliding-window`: the current and the previous window's counts, weighted; state lives until the
 * end of the next window. Lua: `lua/sliding-window/`.
 */
export const slidingWindowAlgorithm: AlgorithmDefinition<'sliding-window'> = {
  name: 'sliding-window',
  kind: 'rate',
  usesBurst: false,
  keepsSpendIds: false,
  lifetimeMs: ({ windowMs }) => 2 * windowMs, // until the end of the next window
};
