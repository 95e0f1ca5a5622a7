import {
  type Algorithm,
  type LimitRule,
  POLICY_ALGORITHMS,
  resolvePolicy,
} from '../../lib/core/policy';
import { batchCall, type QueuedDecision } from '../../lib/stores/batch-args.util';
import { stateLifetimeMs } from '../../lib/stores/state-lifetime.util';
import type { SpendRequest } from '../../lib/stores/store.interface';

// The values each algorithm had before the algorithm registry, pinned as numbers and argument
// lists rather than read back from the registry (test/unit/algorithm-registry.spec.ts checks that
// the registry, the Lua models and the memory twins agree with each other; this checks that they
// still agree with what the stores did by name: a flipped flag in one definition would pass there).

const rule = (limit: number, windowMs: number, burst = limit): LimitRule => ({
  limit,
  windowMs,
  burst,
});

describe('algorithm facts pinned from before the registry', () => {
  it('state lifetimes: a window; two for sliding-window; a full bucket drained for token-bucket and gcra', () => {
    const limits = [rule(3, 7_000, 5), rule(10, 1_000)];
    const expected: Record<Algorithm, number> = {
      'fixed-window': 7_000,
      'sliding-window': 14_000,
      'token-bucket': Math.ceil((5 * 7_000) / 3), // 11 667: the longest of 11 667 and 1 000
      gcra: Math.ceil((5 * 7_000) / 3),
      'sliding-log': 7_000,
      concurrency: 7_000,
    };
    for (const algorithm of POLICY_ALGORITHMS) {
      expect([algorithm, stateLifetimeMs(algorithm, limits)]).toEqual([
        algorithm,
        expected[algorithm],
      ]);
    }
  });

  it('burst is an option of token-bucket and gcra only', () => {
    const accepting = POLICY_ALGORITHMS.filter((algorithm) => {
      try {
        resolvePolicy({ name: 'p', algorithm, limit: 2, window: 1_000, burst: 4 });
        return true;
      } catch {
        return false;
      }
    });
    expect(accepting).toEqual(['token-bucket', 'gcra']);
  });

  it('a coalesced decision carries its spend id when its script reads it: sliding-log and concurrency, and a spend settled by its receipt; a run with a spend carries its field and the fields done', () => {
    const argsOf = (
      algorithm: Algorithm,
      settles: boolean,
      spend = true,
    ): Array<string | number> => {
      const request: SpendRequest = {
        policy: 'p',
        algorithm,
        limits: [rule(2, 1_000)],
        keys: ['k'],
        cost: 1,
        ...(settles && { settles: true }),
      };
      const queued = {
        request,
        spend,
        spendId: 'tag:7',
        deadline: undefined,
        now: '',
        slot: -1,
        resolve: () => undefined,
        reject: () => undefined,
      } as QueuedDecision;
      return batchCall([queued], 'rl:', '', 0, false, 'rl:{}!tag', () => 'tag:1*,tag:2*').args;
    };
    const carrying = (settles: boolean, spend: boolean) =>
      POLICY_ALGORITHMS.filter((algorithm) =>
        argsOf(algorithm, settles, spend)
          .slice(0, spend ? -2 : undefined)
          .includes('tag:7'),
      );
    expect(carrying(false, false)).toEqual(['sliding-log', 'concurrency']);
    expect(carrying(false, true)).toEqual(['sliding-log', 'concurrency']);
    expect(carrying(true, true)).toEqual(POLICY_ALGORITHMS);
    for (const algorithm of POLICY_ALGORITHMS) {
      expect([algorithm, argsOf(algorithm, false).slice(-2)]).toEqual([
        algorithm,
        ['tag:7*', 'tag:1*,tag:2*'],
      ]);
      expect([algorithm, argsOf(algorithm, false, false).at(-2)]).not.toEqual([
        algorithm,
        'tag:7*',
      ]);
    }
  });
});
