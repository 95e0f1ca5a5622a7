import type { Algorithm } from '../../core/algorithms/algorithm-definition';
import { bucketMemory } from './bucket.memory';
import { concurrencyMemory } from './concurrency.memory';
import { fixedWindowMemory } from './fixed-window.memory';
import type { MemoryAlgorithm } from './memory-algorithm';
import { slidingLogMemory } from './sliding-log.memory';
import { slidingWindowMemory } from './sliding-window.memory';

/**
 * Each algorithm's in-process twin (the `MemoryStore`'s model of its Lua scripts), by name. The
 * mapped type makes an algorithm without a memory model a compile error.
 */
export const MEMORY_MODELS: { readonly [A in Algorithm]: MemoryAlgorithm<unknown> } = {
  'fixed-window': fixedWindowMemory,
  'sliding-window': slidingWindowMemory,
  'token-bucket': bucketMemory,
  gcra: bucketMemory,
  'sliding-log': slidingLogMemory,
  concurrency: concurrencyMemory,
};
