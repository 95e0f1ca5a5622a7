import fc from 'fast-check';
import { Limiter, type Decision } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { backends, TestClock } from '../support/backends';
/**
 * Review of 846a7dc: RedisStore and MemoryStore agree at every instant (peek's allowed, remaining,
 * retryAfterMs, resetAfterMs after each step) over random sequences of consume / adjust (up, down,
 * to 0, on copies of receipts) / refund / clock advance (0 included: same-millisecond steps),
 * with a window of 7 s over 10 units (a non-integer emission interval for gcra).
 */
const stores = backends('review-adjust-differential');
type Op = { kind: 'consume' | 'adjust' | 'refund' | 'advance'; a: number; b: number };
const op = fc.record({
  kind: fc.constantFrom('consume', 'consume', 'adjust', 'refund', 'advance'),
  a: fc.nat(30),
  b: fc.nat(25),
}) as fc.Arbitrary<Op>;
jest.setTimeout(120_000);
it.each(ALGORITHMS)(
  '%s: RedisStore and MemoryStore agree through consume / adjust / refund / advance',
  async (algorithm) => {
    const redis = stores.find((s) => s.name === 'redis')!;
    const memory = stores.find((s) => s.name === 'memory')!;
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        run++;
        const clocks = [new TestClock(), new TestClock()];
        const lims = [redis, memory].map(
          (b, i) =>
            new Limiter(b.store(clocks[i]), {
              name: `d${run}`,
              algorithm,
              limit: 10,
              window: 7000,
            }),
        );
        const spends: Decision[][] = [[], []];
        const trace: string[] = [];
        for (const o of ops) {
          for (let i = 0; i < 2; i++) {
            const l = lims[i]!;
            if (o.kind === 'advance') clocks[i]!.advance(o.a * o.a * 20);
            else if (o.kind === 'consume') {
              const d = await l.consume('k', { cost: 1 + (o.a % 6) });
              if (d.allowed) spends[i]!.push(d);
            } else if (spends[i]!.length) {
              const d = spends[i]![o.a % spends[i]!.length]!;
              if (o.kind === 'adjust') await l.adjust({ ...d.receipt }, o.b % 14);
              else await l.refund({ ...d.receipt });
            }
          }
          const [p0, p1] = await Promise.all(lims.map((l) => l.peek('k')));
          const f = (p: Decision) =>
            `${p.allowed} ${p.remaining} ${p.retryAfterMs} ${p.resetAfterMs}`;
          trace.push(`${o.kind} ${o.a} ${o.b}: ${f(p0!)} | ${f(p1!)}`);
          if (f(p0!) !== f(p1!)) throw new Error(trace.join('\n'));
        }
      }),
      { numRuns: 150 },
    );
  },
);
