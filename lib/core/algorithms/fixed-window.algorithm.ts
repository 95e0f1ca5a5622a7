import type { AlgorithmDefinition } from './algorithm-definition';

/** `fixed-window`: a counter per window; state lives until its window ends. Lua: `lua/fixed-window/`. */
export const fixedWindowAlgorithm: AlgorithmDefinition<'fixed-window'> = {
  name: 'fixed-window',
  kind: 'rate',
  usesBurst: false,
  keepsSpendIds: false,
  lifetimeMs: ({ windowMs }) => windowMs,
};
