import fc from 'fast-check';
import { type Algorithm, type Decision, Limiter, RateLimitedError, type Receipt } from '../../lib';
import { backends, TestClock } from '../support/backends';
import { type ModelSpend, ReferenceModel } from '../support/reference-model';

// Hundreds of refunds on one key, against a model that knows no ledger: refunds.md promises that a
// spend made through begin()/attempt() refunds (or adjusts) exactly once whatever its key's ledger
// has trimmed, and that a copy of a receipt never refunds again. Quick spends refunded at once (a
// plain consume each) push the ledger past its cap; the begin() spends are settled later, in any
// order, through JSON copies, any number of times.
const stores = backends('ledger-property');
const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 20);
const KEYS = ['a', 'b'];
const copy = (receipt: Receipt): Receipt => JSON.parse(JSON.stringify(receipt)) as Receipt;

type Command =
  | { kind: 'begin'; keys: string[]; cost: number }
  | { kind: 'burst'; keys: string[]; n: number }
  | { kind: 'refund'; pick: number }
  | { kind: 'adjust'; pick: number; cost: number }
  | { kind: 'reset'; keys: string[] }
  | { kind: 'advance'; ms: number };

const keys = fc.subarray(KEYS, { minLength: 1, maxLength: 2 });
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('begin' as const),
      keys,
      cost: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('burst' as const),
      keys,
      // Mostly past the ledger's cap of 124 ids.
      n: fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 120, max: 150 })),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('refund' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('adjust' as const),
      pick: fc.nat(),
      cost: fc.integer({ min: 0, max: 6 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const), keys }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.integer({ min: 1, max: 90_000 }),
    }),
  },
);

describe.each([
  'fixed-window',
  'sliding-window',
  'sliding-log',
  'token-bucket',
  'gcra',
] as Algorithm[])(
  '%s: every store and the model agree through hundreds of refunds on a key',
  (algorithm) => {
    it('begin() spends settle exactly once past the ledger’s cap; copies never settle again', async () => {
      const property = fc.asyncProperty(
        fc.array(command, { minLength: 4, maxLength: 14 }),
        async (commands) => {
          const clock = new TestClock();
          clock.advance(321);
          // 200 per 10 minutes: the bursts fit, and the clock crosses windows now and then.
          const policy = { name: 'lp', algorithm, limit: 200, window: '10m' };
          const limiters = stores.map((backend) => new Limiter(backend.store(clock), policy));
          const model = new ReferenceModel(algorithm, limiters[0]!.policy.limits, false);
          const begun: Array<{ receipts: Receipt[]; spend: ModelSpend }> = [];
          const check = async (label: string) => {
            for (const key of KEYS) {
              const expected = model.peek([key], 1, clock.now);
              for (const [i, limiter] of limiters.entries()) {
                const d = await limiter.peek(key);
                expect({ label, key, store: stores[i]!.name, remaining: d.remaining }).toEqual({
                  label,
                  key,
                  store: stores[i]!.name,
                  remaining: expected.remaining,
                });
              }
            }
          };
          for (const [c, cmd] of commands.entries()) {
            const label = `${c}:${cmd.kind}`;
            if (cmd.kind === 'advance') {
              clock.advance(cmd.ms);
            } else if (cmd.kind === 'begin') {
              const expected = model.consume(cmd.keys, cmd.cost, clock.now);
              const receipts: Receipt[] = [];
              for (const limiter of limiters) {
                const decision: Decision = await limiter.begin(cmd.keys, { cost: cmd.cost }).then(
                  (attempt) => attempt.decision,
                  (error: unknown) => {
                    if (error instanceof RateLimitedError) return error.decision;
                    throw error;
                  },
                );
                expect({ label, allowed: decision.allowed }).toEqual({
                  label,
                  allowed: expected.decision.allowed,
                });
                receipts.push(decision.receipt);
              }
              if (expected.spend) begun.push({ receipts, spend: expected.spend });
            } else if (cmd.kind === 'burst') {
              for (let i = 0; i < cmd.n; i++) {
                clock.advance(1);
                const expected = model.consume(cmd.keys, 1, clock.now);
                for (const limiter of limiters) {
                  const spent = await limiter.consume(cmd.keys);
                  expect({ label, i, allowed: spent.allowed }).toEqual({
                    label,
                    i,
                    allowed: expected.decision.allowed,
                  });
                  await limiter.refund(spent);
                }
                if (expected.spend) model.refund(expected.spend, clock.now);
              }
            } else if (cmd.kind === 'reset') {
              for (const limiter of limiters) await limiter.reset(cmd.keys);
              model.reset(cmd.keys);
            } else {
              const target = begun[cmd.pick % Math.max(1, begun.length)];
              if (!target) continue;
              // Through a JSON copy: the store's ledger alone stops a second settlement.
              for (const [i, limiter] of limiters.entries()) {
                if (cmd.kind === 'refund') await limiter.refund(copy(target.receipts[i]!));
                else await limiter.adjust(copy(target.receipts[i]!), cmd.cost);
              }
              if (cmd.kind === 'refund') model.refund(target.spend, clock.now);
              else model.adjust(target.spend, cmd.cost, clock.now);
            }
            await check(label);
          }
        },
      );
      await fc.assert(property, { numRuns: RUNS });
    });
  },
);
