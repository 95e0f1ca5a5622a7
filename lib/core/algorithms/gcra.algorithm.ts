import type { AlgorithmDefinition } from './algorithm-definition';
import { bucketLifetimeMs } from './token-bucket.algorithm';

/**
 * `gcra`: generic cell rate algorithm, emission interval `window / limit`, tolerance `burst`
 * (default `limit`). Lua: `lua/gcra/`.
 */
export const gcraAlgorithm: AlgorithmDefinition<'gcra'> = {
  name: 'gcra',
  kind: 'rate',
  usesBurst: true,
  keepsSpendIds: false,
  lifetimeMs: bucketLifetimeMs,
};
