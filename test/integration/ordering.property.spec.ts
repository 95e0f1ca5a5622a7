import fc from 'fast-check';
import { type Algorithm, type Decision, Limiter, type Receipt } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { stateLifetimeMs } from '../../lib/stores/state-lifetime.util';
import { backends, TestClock } from '../support/backends';
import { limitsFor } from '../support/limits.arbitrary';
import { type ModelDecision, type ModelSpend, ReferenceModel } from '../support/reference-model';

/**
 * Operations issued together without awaiting (as concurrent requests of one process issue them)
 * take effect in issue order on every store, coalescing on or off: compared with a reference model
 * that applies them one by one. Resets, and instants exactly at window edges and at the end of a
 * spend's lifetime, are part of the mix.
 */
const stores = backends('ordering-model', { uncoalesced: true });
const KEYS = ['a', 'b', 'c'];
const RUNS = Number(process.env.REDLIMIT_PROPERTY_RUNS ?? 40);

type Op =
  | { kind: 'consume'; keys: string[]; cost: number }
  | { kind: 'peek'; keys: string[]; cost: number }
  | { kind: 'refund'; pick: number; copy: boolean } // pick: 0 the latest spend, 1 the one before…
  | { kind: 'reset'; keys: string[] };

type Step =
  | { kind: 'together'; ops: Op[] }
  | { kind: 'advance'; ms: number }
  | { kind: 'edge'; limit: number } // to exactly the next window edge of that limit
  | { kind: 'lifetime'; pick: number; offset: -1 | 0 | 1 }; // to a spend's last instant (±1)

const keys = fc.subarray(KEYS, { minLength: 1, maxLength: 2 });
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('consume' as const),
      keys,
      cost: fc.integer({ min: 1, max: 2 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('peek' as const),
      keys,
      cost: fc.integer({ min: 1, max: 2 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('refund' as const),
      pick: fc.nat({ max: 7 }),
      copy: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const), keys }) },
);
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('together' as const),
      ops: fc.array(op, { minLength: 1, maxLength: 5 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.integer({ min: 1, max: 900 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('edge' as const), limit: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('lifetime' as const),
      pick: fc.nat({ max: 7 }),
      offset: fc.constantFrom(-1 as const, 0 as const, 0 as const, 1 as const),
    }),
  },
);

/** A spend picked from the end (0: the latest): recent spends are the interesting ones. */
const recent = <T>(list: readonly T[], pick: number): T | undefined =>
  list.length === 0 ? undefined : list[list.length - 1 - (pick % list.length)];

const pick = (d: Decision): ModelDecision => ({
  allowed: d.allowed,
  remaining: d.remaining,
  retryAfterMs: d.retryAfterMs,
  resetAfterMs: d.resetAfterMs,
});

type Spent = Array<{ decisions: Decision[]; spend: ModelSpend }>;

/**
 * Issues `ops` on every limiter without awaiting in between (each store its own run), then
 * applies them one by one to the model and compares every decision, whole or by `fields`.
 */
async function issueTogether(
  limiters: readonly Limiter[],
  model: ReferenceModel,
  ops: readonly Op[],
  spent: Spent,
  now: number,
  fields: ReadonlyArray<keyof ModelDecision> = [
    'allowed',
    'remaining',
    'retryAfterMs',
    'resetAfterMs',
  ],
): Promise<void> {
  // Refund targets are the spends made before these operations were issued.
  const issued = [...spent];
  const target = (p: number) => recent(issued, p);
  const outcomes = await Promise.all(
    limiters.map((limiter, i) =>
      Promise.all(
        ops.map((o) => {
          if (o.kind === 'consume') return limiter.consume(o.keys, { cost: o.cost });
          if (o.kind === 'peek') return limiter.peek(o.keys, { cost: o.cost });
          if (o.kind === 'reset') return limiter.reset(o.keys);
          const t = target(o.pick);
          if (!t) return Promise.resolve(false);
          const { receipt } = t.decisions[i]!;
          return limiter.refund(
            o.copy ? (JSON.parse(JSON.stringify(receipt)) as Receipt) : receipt,
          );
        }),
      ),
    ),
  );
  const only = (d: ModelDecision) => Object.fromEntries(fields.map((f) => [f, d[f]]));
  ops.forEach((o, n) => {
    let expected: ModelDecision | undefined;
    let spend: ModelSpend | undefined;
    if (o.kind === 'consume') ({ decision: expected, spend } = model.consume(o.keys, o.cost, now));
    else if (o.kind === 'peek') expected = model.peek(o.keys, o.cost, now);
    else if (o.kind === 'reset') model.reset(o.keys);
    else {
      const t = target(o.pick);
      if (t) model.refund(t.spend, now);
    }
    if (!expected) return;
    const decisions = outcomes.map((made) => made[n] as Decision);
    decisions.forEach((decision, i) => {
      const store = stores[i]!.name;
      expect({ store, op: n, ...only(pick(decision)) }).toEqual({
        store,
        op: n,
        ...only(expected),
      });
    });
    if (spend) spent.push({ decisions, spend });
  });
}

describe.each(ALGORITHMS)(
  '%s: operations issued together take effect in issue order',
  (algorithm) => {
    it('on every store, as on a model that applies them one by one', async () => {
      const property = fc.asyncProperty(
        limitsFor(algorithm, 5),
        fc.array(step, { minLength: 3, maxLength: 25 }),
        async (limits, steps) => {
          const clock = new TestClock();
          clock.advance(123);
          const policy = { name: 'order', algorithm, limits };
          const limiters = stores.map((backend) => new Limiter(backend.store(clock), policy));
          const resolved = limiters[0]!.policy.limits;
          const lifetime = stateLifetimeMs(algorithm, resolved);
          const model = new ReferenceModel(algorithm, resolved);
          const spent: Spent = [];
          for (const s of steps) {
            if (s.kind === 'advance') clock.advance(s.ms);
            else if (s.kind === 'edge') {
              const { windowMs } = resolved[s.limit % resolved.length]!;
              clock.now = (Math.floor(clock.now / windowMs) + 1) * windowMs;
            } else if (s.kind === 'lifetime') {
              const target = recent(spent, s.pick);
              const to = target && target.spend.at + lifetime + s.offset;
              if (to !== undefined && to > clock.now) clock.now = to;
            } else {
              const ops = s.ops.map((o) =>
                o.kind === 'consume' || o.kind === 'peek'
                  ? { ...o, cost: Math.min(o.cost, limiters[0]!.policy.maxCost) }
                  : o,
              );
              await issueTogether(limiters, model, ops, spent, clock.now);
            }
          }
        },
      );
      await fc.assert(property, { numRuns: RUNS, endOnFailure: true });
    });
  },
);

describe.each(['fixed-window', 'sliding-log'] as Algorithm[])(
  '%s on Redis TIME: a fresh store keeps issue order from its first operation',
  (algorithm) => {
    // Windows of a week: every operation of a run falls in one window, so allowed / remaining do
    // not depend on the instant, and the stores can read Redis TIME (the first spend measures it).
    it('every store, as on a model that applies them one by one', async () => {
      const property = fc.asyncProperty(
        fc.integer({ min: 2, max: 4 }),
        fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 }),
        async (limit, bursts) => {
          const policy = { name: 'fresh', algorithm, limit, window: '7d' };
          const limiters = stores.map((backend) => new Limiter(backend.store(), policy));
          const model = new ReferenceModel(algorithm, limiters[0]!.policy.limits, false);
          const now = TestClock.BASE; // any instant of the one window
          const spent: Spent = [];
          for (const ops of bursts) {
            await issueTogether(limiters, model, ops, spent, now, ['allowed', 'remaining']);
          }
        },
      );
      await fc.assert(property, {
        numRuns: RUNS,
        endOnFailure: true,
        examples: [
          // Found on Cluster with coalescing: a peek queued in its slot's turn was overtaken by a
          // later cross-slot spend that had flushed the queues before that turn came.
          [
            4,
            [
              [
                { kind: 'reset', keys: ['a', 'c'] },
                { kind: 'consume', keys: ['a', 'b'], cost: 1 },
                { kind: 'consume', keys: ['b'], cost: 1 },
                { kind: 'peek', keys: ['b'], cost: 2 },
                { kind: 'consume', keys: ['b', 'c'], cost: 1 },
              ],
              [
                { kind: 'refund', pick: 0, copy: true },
                { kind: 'consume', keys: ['a', 'b'], cost: 2 },
              ],
              [{ kind: 'consume', keys: ['c'], cost: 2 }],
              [
                { kind: 'peek', keys: ['b'], cost: 2 },
                { kind: 'refund', pick: 6, copy: false },
              ],
            ],
          ],
        ],
      });
    });
  },
);
