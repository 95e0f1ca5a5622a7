import fc from 'fast-check';
import { ALGORITHMS, type Decision, Limiter, type LimitRule } from '../../lib';
import { backends, TestClock } from '../support/backends';
import { type ModelDecision, ReferenceModel } from '../support/reference-model';

const [redis, memory] = backends('model');
const KEYS = ['a', 'b', 'c'];

type Command =
  | { kind: 'consume'; keys: string[]; cost: number }
  | { kind: 'refund'; pick: number }
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
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 400, max: 2_500 })),
    }),
  },
);

const limitsArb: fc.Arbitrary<LimitRule[]> = fc.oneof(
  fc
    .tuple(fc.integer({ min: 2, max: 5 }), fc.constantFrom(700, 1_000))
    .map(([limit, windowMs]) => [{ limit, windowMs }]),
  fc.tuple(fc.integer({ min: 2, max: 3 }), fc.integer({ min: 4, max: 6 })).map(([short, long]) => [
    { limit: short, windowMs: 500 },
    { limit: long, windowMs: 1_500 },
  ]),
);

const pick = (d: Decision): ModelDecision => ({
  allowed: d.allowed,
  remaining: d.remaining,
  retryAfterMs: d.retryAfterMs,
  resetAfterMs: d.resetAfterMs,
});

describe.each(ALGORITHMS)(
  '%s: RedisStore, MemoryStore and a reference model agree',
  (algorithm) => {
    it('on random sequences of consume / refund / clock advance', async () => {
      await fc.assert(
        fc.asyncProperty(
          limitsArb,
          fc.array(command, { minLength: 5, maxLength: 40 }),
          async (limits, commands) => {
            const clock = new TestClock();
            clock.advance(123); // not on a window boundary
            const policy = {
              name: 'model',
              algorithm,
              limits: limits.map((r) => ({ limit: r.limit, window: r.windowMs })),
            };
            const onRedis = new Limiter(redis!.store(clock), policy);
            const inMemory = new Limiter(memory!.store(clock), policy);
            const model = new ReferenceModel(algorithm, limits);
            const spent: Array<{
              r: Decision;
              m: Decision;
              spend: Parameters<ReferenceModel['refund']>[0];
            }> = [];
            const smallest = Math.min(...limits.map((r) => r.limit));
            for (const cmd of commands) {
              if (cmd.kind === 'advance') {
                clock.advance(cmd.ms);
              } else if (cmd.kind === 'refund') {
                const target = spent[cmd.pick % Math.max(1, spent.length)];
                if (!target) continue;
                await onRedis.refund(target.r);
                await inMemory.refund(target.m);
                model.refund(target.spend);
              } else {
                const cost = Math.min(cmd.cost, smallest);
                const r = await onRedis.consume(cmd.keys, { cost });
                const m = await inMemory.consume(cmd.keys, { cost });
                const expected = model.consume(cmd.keys, cost, clock.now);
                expect(pick(r)).toEqual(expected.decision);
                expect(pick(m)).toEqual(expected.decision);
                if (expected.spend) spent.push({ r, m, spend: expected.spend });
              }
            }
          },
        ),
        { numRuns: Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 60) },
      );
    });
  },
);
