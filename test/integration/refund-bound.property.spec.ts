import fc from 'fast-check';
import { type Decision, Limiter } from '../../lib';
import { backends, TestClock } from '../support/backends';

const stores = backends('refund-bound');
const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 40);

type Step =
  { kind: 'spend'; cost: number } | { kind: 'refund'; pick: number } | { kind: 'wait'; ms: number };
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('spend' as const),
      cost: fc.integer({ min: 1, max: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('refund' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      ms: fc.integer({ min: 1, max: 1_500 }),
    }),
  },
);

/** Tokens left at `now` had only `spends` happened: capacity 5, one token per 300 ms. */
function counterfactualRoom(
  spends: ReadonlyArray<{ at: number; cost: number }>,
  now: number,
): number {
  const capacity = 5 * 1_500;
  let backlog = 0;
  let last = -Infinity;
  for (const { at, cost } of spends) {
    backlog = Math.max(0, backlog - (at - last) * 5) + cost * 1_500;
    last = at;
  }
  backlog = Math.max(0, backlog - (now - last) * 5);
  return Math.floor((capacity - backlog) / 1_500);
}

describe.each(stores)('$name store', (backend) => {
  it.each(['token-bucket', 'gcra'] as const)(
    '%s: refunds never leave more budget than if the refunded spends had never happened',
    async (algorithm) => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 3, maxLength: 30 }), async (steps) => {
          const clock = new TestClock();
          const limiter = new Limiter(backend.store(clock), {
            name: 'rb',
            algorithm,
            limit: 5,
            window: 1_500,
          });
          const spends: Array<{ decision: Decision; at: number; cost: number; refunded: boolean }> =
            [];
          let exactSoFar = true; // every refund so far was of the most recent spend
          for (const s of steps) {
            if (s.kind === 'wait') clock.advance(s.ms);
            else if (s.kind === 'spend') {
              const decision = await limiter.consume('k', { cost: s.cost });
              if (decision.allowed)
                spends.push({ decision, at: clock.now, cost: s.cost, refunded: false });
            } else if (spends.length > 0) {
              const target = spends[s.pick % spends.length]!;
              await limiter.refund(target.decision);
              if (target.refunded) continue;
              exactSoFar &&= target === spends.at(-1);
              target.refunded = true;
              const kept = spends.filter((x) => !x.refunded);
              const peek = await limiter.peek('k');
              const room = peek.allowed ? peek.remaining + 1 : peek.remaining; // after one unit, if it fits
              const bound = counterfactualRoom(kept, clock.now);
              expect(room).toBeLessThanOrEqual(bound);
              if (exactSoFar) {
                // Refunding the most recent spend is exact, whatever spends came before it.
                expect(room).toBe(bound);
              }
            }
          }
        }),
        { numRuns: RUNS },
      );
    },
  );
});
