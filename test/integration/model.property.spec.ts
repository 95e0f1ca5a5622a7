import fc from 'fast-check';
import { type Decision, Limiter } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';
import { limitsFor } from '../support/limits.arbitrary';
import { type ModelDecision, type ModelSpend, ReferenceModel } from '../support/reference-model';

const stores = backends('model');
const KEYS = ['a', 'b', 'c'];
const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 40);

type Command =
  | { kind: 'consume'; keys: string[]; cost: number }
  | { kind: 'refund'; pick: number }
  | { kind: 'adjust'; pick: number; cost: number }
  | { kind: 'advance'; ms: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('consume' as const),
      keys: fc.subarray(KEYS, { minLength: 1, maxLength: 2 }),
      cost: fc.integer({ min: 1, max: 2 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('refund' as const), pick: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('adjust' as const),
      pick: fc.nat(),
      cost: fc.integer({ min: 0, max: 4 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 400, max: 2_500 })),
    }),
  },
);

const binding = (d: Decision) => ({ limit: d.limit, windowMs: d.windowMs, blockedBy: d.blockedBy });

const pick = (d: Decision): ModelDecision => ({
  allowed: d.allowed,
  remaining: d.remaining,
  retryAfterMs: d.retryAfterMs,
  resetAfterMs: d.resetAfterMs,
});

describe.each(ALGORITHMS)('%s: every store and a reference model agree', (algorithm) => {
  it('on random sequences of consume / refund / adjust / clock advance', async () => {
    const property = fc.asyncProperty(
      limitsFor(algorithm),
      fc.array(command, { minLength: 5, maxLength: 40 }),
      async (limits, commands) => {
        const clock = new TestClock();
        clock.advance(123); // not on a window boundary
        const policy = { name: 'model', algorithm, limits };
        const limiters = stores.map((backend) => new Limiter(backend.store(clock), policy));
        const model = new ReferenceModel(algorithm, limiters[0]!.policy.limits);
        const spent: Array<{ decisions: Decision[]; spend: ModelSpend }> = [];
        for (const cmd of commands) {
          if (cmd.kind === 'advance') {
            clock.advance(cmd.ms);
          } else if (cmd.kind === 'refund') {
            const target = spent[cmd.pick % Math.max(1, spent.length)];
            if (!target) continue;
            for (const [i, limiter] of limiters.entries())
              await limiter.refund(target.decisions[i]!);
            model.refund(target.spend, clock.now);
          } else if (cmd.kind === 'adjust') {
            const target = spent[cmd.pick % Math.max(1, spent.length)];
            if (!target) continue;
            for (const [i, limiter] of limiters.entries())
              await limiter.adjust(target.decisions[i]!, cmd.cost);
            model.adjust(target.spend, cmd.cost, clock.now);
          } else {
            const cost = Math.min(cmd.cost, limiters[0]!.policy.maxCost);
            const decisions: Decision[] = [];
            for (const limiter of limiters)
              decisions.push(await limiter.consume(cmd.keys, { cost }));
            const expected = model.consume(cmd.keys, cost, clock.now);
            decisions.forEach((decision, i) => {
              const store = stores[i]!.name;
              expect({ store, ...pick(decision) }).toEqual({ store, ...expected.decision });
              // Which limit binds (and which key refused) is the same on every store.
              expect({ store, ...binding(decision) }).toEqual({ store, ...binding(decisions[0]!) });
            });
            if (expected.spend) spent.push({ decisions, spend: expected.spend });
          }
        }
      },
    );
    await fc.assert(property, { numRuns: RUNS });
  });
});
