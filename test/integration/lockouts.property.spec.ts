import fc from 'fast-check';
import {
  type BlockOptions,
  type Decision,
  Limiter,
  type LimitOptions,
  type Receipt,
} from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';
import { limitsFor } from '../support/limits.arbitrary';
import { type ModelSpend, ReferenceModel } from '../support/reference-model';

const stores = backends('lockouts-property');
const KEYS = ['a', 'b', 'c'];
const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 40);

type Command =
  | { kind: 'consume' | 'peek'; keys: string[]; cost: number }
  | { kind: 'refund'; pick: number; copy: boolean }
  | { kind: 'adjust'; pick: number; cost: number; copy: boolean }
  | { kind: 'reset'; key: string }
  | { kind: 'advance'; ms: number }
  | { kind: 'to-lockout-end'; before: boolean };

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constantFrom('consume' as const, 'consume' as const, 'peek' as const),
      keys: fc.subarray(KEYS, { minLength: 1, maxLength: 2 }),
      cost: fc.integer({ min: 1, max: 2 }),
    }),
  },
  // Receipts refunded or adjusted as they were returned, or as JSON copies (from before a
  // lockout, a restart or a reset, too).
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('refund' as const),
      pick: fc.nat(),
      copy: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('adjust' as const),
      pick: fc.nat(),
      cost: fc.integer({ min: 0, max: 3 }),
      copy: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('reset' as const), key: fc.constantFrom(...KEYS) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 400, max: 4_000 })),
    }),
  },
  // The boundary instants: a lockout's last millisecond, and its end.
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('to-lockout-end' as const), before: fc.boolean() }),
  },
);

const block: fc.Arbitrary<BlockOptions> = fc.record({
  duration: fc.integer({ min: 50, max: 2_000 }),
  factor: fc.constantFrom(1, 1.5, 2, 3),
  max: fc.integer({ min: 2_000, max: 6_000 }),
  forgetAfter: fc.integer({ min: 100, max: 5_000 }),
  restart: fc.boolean(),
});

const copyOf = (receipt: Receipt): Receipt => JSON.parse(JSON.stringify(receipt)) as Receipt;

const view = (d: Decision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  retryAfterMs: d.retryAfterMs,
  resetAfterMs: d.resetAfterMs,
  blockedUntil: d.blockedUntil,
  blockedBy: d.blockedBy?.key,
  limit: d.limit,
});

const modelView = (d: Decision) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  retryAfterMs: d.retryAfterMs,
  resetAfterMs: d.resetAfterMs,
  ...(d.blockedUntil !== undefined && { blockedUntil: d.blockedUntil }),
});

describe.each(ALGORITHMS)(
  '%s with block: every store and a reference model decide alike',
  (algorithm) => {
    it('on random sequences of consume / peek / refund / adjust / reset / clock advance, restart or not', async () => {
      const property = fc.asyncProperty(
        limitsFor(algorithm),
        block,
        fc.array(command, { minLength: 5, maxLength: 40 }),
        async (limits, lockout, commands) => {
          const clock = new TestClock();
          clock.advance(123);
          // (restart takes a policy with one limit)
          const policy = {
            name: 'locks',
            algorithm,
            limits,
            block: { ...lockout, restart: lockout.restart === true && limits.length === 1 },
          };
          const limiters = stores.map((backend) => new Limiter(backend.store(clock), policy));
          const { limits: rules, block: rule } = limiters[0]!.policy;
          // Written from the docs (abuse-controls.md), not from the stores.
          const model = new ReferenceModel(algorithm, rules, true, rule);
          const spent: Decision[][] = [];
          const spends: ModelSpend[] = [];
          let lockoutEnd = 0;
          for (const cmd of commands) {
            if (cmd.kind === 'advance') {
              clock.advance(cmd.ms);
            } else if (cmd.kind === 'to-lockout-end') {
              const to = lockoutEnd - (cmd.before ? 1 : 0);
              if (to > clock.now) clock.now = to;
            } else if (cmd.kind === 'refund' || cmd.kind === 'adjust') {
              const target = spent[cmd.pick % Math.max(1, spent.length)];
              if (!target) continue;
              const cost = Math.min(
                cmd.kind === 'adjust' ? cmd.cost : 0,
                limiters[0]!.policy.maxCost,
              );
              for (const [i, limiter] of limiters.entries()) {
                const receipt = cmd.copy ? copyOf(target[i]!.receipt) : target[i]!;
                if (cmd.kind === 'refund') await limiter.refund(receipt);
                else await limiter.adjust(receipt, cost);
              }
              const spend = spends[cmd.pick % spends.length]!;
              if (cmd.kind === 'refund') model.refund(spend, clock.now);
              else model.adjust(spend, cost, clock.now);
            } else if (cmd.kind === 'reset') {
              for (const limiter of limiters) await limiter.reset(cmd.key);
              model.reset([cmd.key]);
            } else {
              const cost = Math.min(cmd.cost, limiters[0]!.policy.maxCost);
              const decisions: Decision[] = [];
              for (const limiter of limiters) {
                decisions.push(
                  cmd.kind === 'consume'
                    ? await limiter.consume(cmd.keys, { cost })
                    : await limiter.peek(cmd.keys, { cost }),
                );
              }
              const expected =
                cmd.kind === 'consume'
                  ? model.consume(cmd.keys, cost, clock.now)
                  : { decision: model.peek(cmd.keys, cost, clock.now), spend: undefined };
              expect({ ...modelView(decisions[0]!), store: stores[0]!.name }).toEqual({
                ...expected.decision,
                store: stores[0]!.name,
              });
              if (expected.spend) spends.push(expected.spend);
              const first = { ...view(decisions[0]!), store: stores[0]!.name };
              decisions.forEach((decision, i) => {
                expect({ ...view(decision), store: stores[i]!.name }).toEqual({
                  ...first,
                  store: stores[i]!.name,
                });
              });
              if (decisions[0]!.blockedUntil !== undefined) lockoutEnd = decisions[0]!.blockedUntil;
              if (cmd.kind === 'consume' && decisions[0]!.allowed) spent.push(decisions);
            }
          }
        },
      );
      // Always tried as well: the review's restart scenario (two in flight, a refusal that locks out
      // and forgets the count, a spend after the lockout, then the old receipts refunded).
      const bucket = algorithm === 'token-bucket' || algorithm === 'gcra';
      const review: [LimitOptions[], BlockOptions, Command[]] = [
        [{ limit: 2, window: 1_000, ...(bucket && { burst: 2 }) }],
        { duration: 50, factor: 1, max: 2_000, forgetAfter: 100, restart: true },
        [
          { kind: 'consume', keys: ['a'], cost: 1 },
          { kind: 'consume', keys: ['a'], cost: 1 },
          { kind: 'consume', keys: ['a'], cost: 1 },
          { kind: 'to-lockout-end', before: false },
          { kind: 'consume', keys: ['a'], cost: 1 },
          { kind: 'refund', pick: 0, copy: false },
          { kind: 'refund', pick: 1, copy: true },
          { kind: 'consume', keys: ['a'], cost: 1 },
          { kind: 'consume', keys: ['a'], cost: 1 },
        ],
      ];
      await fc.assert(property, { numRuns: RUNS, examples: [review] });
    }, 120_000);
  },
);
