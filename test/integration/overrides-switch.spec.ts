import fc from 'fast-check';
import { type Algorithm, type Decision, Limiter, PolicyOverrides } from '../../lib';
import { backends, type Backend, TestClock } from '../support/backends';

const stores = backends('overrides-switch');
// The algorithms whose limit an override may change: a token bucket's or gcra's stored state is
// relative to its rate and capacity, so their limit and burst are refused at runtime (specs below).
const RATE_ALGORITHMS: Algorithm[] = ['fixed-window', 'sliding-window', 'sliding-log'];

const started: PolicyOverrides[] = [];
afterEach(() => {
  for (const o of started.splice(0)) o.stop();
});

describe.each(stores)('$name store: exact at the switch of a live limit', (backend: Backend) => {
  describe.each(RATE_ALGORITHMS)('%s', (algorithm) => {
    it.each([
      [10, 20],
      [20, 10],
      [5, 40],
      [40, 5],
    ])(
      'limit %i → %i in the middle of 120 concurrent consumes on one key: never above the larger',
      async (from, to) => {
        // Frozen clock: a bucket admits at most its capacity (burst = limit here), windows stay put.
        const clock = new TestClock();
        clock.advance(1_000);
        const store = backend.store(clock);
        const overrides = new PolicyOverrides(store.overrides!(), { pollMs: 50 });
        started.push(overrides);
        await overrides.start();
        const limiter = new Limiter(
          store,
          { name: 'switch', algorithm, limit: from, window: '1m' },
          { overrides },
        );
        const calls: Array<Promise<Decision>> = [];
        for (let i = 0; i < 60; i++) calls.push(limiter.consume('k'));
        const switched = overrides.set(limiter.policy, { limit: to });
        for (let i = 0; i < 20; i++) calls.push(limiter.consume('k'));
        await switched;
        for (let i = 0; i < 40; i++) calls.push(limiter.consume('k'));
        const decisions = await Promise.all(calls);
        const allowed = decisions.filter((d) => d.allowed).length;
        expect(allowed).toBeLessThanOrEqual(Math.max(from, to));
        // After the switch, a call runs under the new limit.
        expect(decisions.at(-1)!.limit).toBe(to);
        // Nothing is admitted afterwards either (the frozen clock gives nothing back).
        const after = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
        expect(allowed + after.filter((d) => d.allowed).length).toBeLessThanOrEqual(
          Math.max(from, to),
        );
      },
    );

    it('a spend refunded after a raise gives back only its units: net admitted never above the larger limit', async () => {
      const clock = new TestClock();
      clock.advance(1_000);
      const store = backend.store(clock);
      const overrides = new PolicyOverrides(store.overrides!(), { pollMs: 50 });
      started.push(overrides);
      await overrides.start();
      const limiter = new Limiter(
        store,
        { name: 'refund-raise', algorithm, limit: 10, window: '1m' },
        { overrides },
      );
      const first = await limiter.consume('k', { cost: 10 });
      expect(first.allowed).toBe(true);
      await overrides.set(limiter.policy, { limit: 20 });
      let admitted = 10;
      for (let i = 0; i < 30; i++) if ((await limiter.consume('k')).allowed) admitted++;
      await limiter.refund(first); // gives back 10 units: net admitted so far is admitted - 10
      for (let i = 0; i < 40; i++) if ((await limiter.consume('k')).allowed) admitted++;
      expect(admitted - 10).toBeLessThanOrEqual(20);
    });

    it('a scoped override switched on and off repeatedly under load: never above the larger', async () => {
      const clock = new TestClock();
      clock.advance(1_000);
      const store = backend.store(clock);
      const overrides = new PolicyOverrides(store.overrides!(), { pollMs: 50 });
      started.push(overrides);
      await overrides.start();
      const limiter = new Limiter(
        store,
        { name: 'flip', algorithm, limit: 8, window: '1m' },
        { overrides },
      );
      const calls: Array<Promise<Decision>> = [];
      const flips: Array<Promise<unknown>> = [];
      for (let round = 0; round < 6; round++) {
        for (let i = 0; i < 15; i++) calls.push(limiter.consume(['t:a:u', 'ip:1']));
        flips.push(
          round % 2 === 0
            ? overrides.set(limiter.policy, { limit: 16 }, { scope: 't:a:' })
            : overrides.clear('flip', { scope: 't:a:' }),
        );
        await flips.at(-1);
      }
      const allowed = (await Promise.all(calls)).filter((d) => d.allowed).length;
      await Promise.all(flips);
      expect(allowed).toBeLessThanOrEqual(16);
    });
  });
});

// Differential: the effective policy is the same on both stores (each has its own PolicyOverrides
// on its own store, given the same overrides); every decision must then agree.
const redisBackends = stores.filter((b) => b.name !== 'memory');
const memory = stores.find((b) => b.name === 'memory')!;

type Step =
  | { op: 'consume'; key: string; cost: number }
  | { op: 'refund'; index: number }
  | { op: 'advance'; ms: number }
  | { op: 'set'; limit: number; scope: string }
  | { op: 'clear'; scope: string };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('consume' as const),
      key: fc.constantFrom('t:a:1', 't:b:1', 'x'),
      cost: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('refund' as const), index: fc.nat(40) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('advance' as const),
      ms: fc.constantFrom(1, 500, 7_000, 30_000, 61_000),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('set' as const),
      limit: fc.integer({ min: 3, max: 12 }),
      scope: fc.constantFrom('', 't:', 't:a:'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('clear' as const),
      scope: fc.constantFrom('', 't:', 't:a:'),
    }),
  },
);

describe.each(redisBackends)('differential $name vs memory under overrides', (backend) => {
  it.each(RATE_ALGORITHMS)(
    '%s: consume / refund / advance with override set/clear interleaved decide alike',
    async (algorithm) => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
          const sides = await Promise.all(
            [backend, memory].map(async (b) => {
              const clock = new TestClock();
              clock.advance(1_000);
              const store = b.store(clock);
              const overrides = new PolicyOverrides(store.overrides!(), { pollMs: 60_000 });
              await overrides.refresh();
              const limiter = new Limiter(
                store,
                { name: 'diff', algorithm, limit: 6, window: '1m' },
                { overrides },
              );
              return { clock, overrides, limiter, decisions: [] as Decision[] };
            }),
          );
          const trace: string[] = [];
          for (const s of steps) {
            const answers: string[] = [];
            for (const side of sides) {
              switch (s.op) {
                case 'consume': {
                  const d = await side.limiter.consume(s.key, { cost: s.cost });
                  side.decisions.push(d);
                  answers.push(`${d.allowed}:${d.remaining}:${d.limit}:${d.retryAfterMs}`);
                  break;
                }
                case 'refund': {
                  const d = side.decisions[s.index % Math.max(1, side.decisions.length)];
                  if (d) await side.limiter.refund(d);
                  answers.push('');
                  break;
                }
                case 'advance':
                  side.clock.advance(s.ms);
                  await side.overrides.refresh();
                  answers.push('');
                  break;
                case 'set':
                  await side.overrides.set(
                    side.limiter.policy,
                    { limit: s.limit },
                    { scope: s.scope },
                  );
                  answers.push('');
                  break;
                case 'clear':
                  await side.overrides.clear('diff', { scope: s.scope });
                  answers.push('');
                  break;
              }
            }
            trace.push(`${JSON.stringify(s)} → ${answers.join(' | ')}`);
            if (answers[0] !== answers[1]) {
              throw new Error(`diverged:\n${trace.join('\n')}`);
            }
          }
          // And every key reads the same.
          for (const key of ['t:a:1', 't:b:1', 'x']) {
            const [a, b] = await Promise.all(sides.map((side) => side.limiter.peek(key)));
            expect(`${a!.allowed}:${a!.remaining}`).toBe(`${b!.allowed}:${b!.remaining}`);
          }
        }),
        { numRuns: 40 },
      );
    },
    60_000,
  );
});
