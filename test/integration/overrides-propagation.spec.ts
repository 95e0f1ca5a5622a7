import type Redis from 'ioredis';
import { Limiter, PolicyOverrides, RedisStore } from '../../lib';
import { createTestClient, uniquePrefix, warmPool } from '../support/redis';

/** Three processes, simulated: three clients, three stores on one prefix, three PolicyOverrides. */
const POLICY = { name: 'prop', algorithm: 'fixed-window', limit: 5, window: '1m' } as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

describe('live limits reach every process', () => {
  let clients: Redis[] = [];
  let instances: Array<{
    client: Redis;
    overrides: PolicyOverrides;
    limiter: Limiter;
    warnings: string[];
  }> = [];

  beforeEach(async () => {
    const prefix = uniquePrefix('overrides-propagation');
    clients = [0, 1, 2].map(() => createTestClient());
    await Promise.all(clients.map((c) => warmPool(c)));
    instances = await Promise.all(
      clients.map(async (client) => {
        const store = new RedisStore({ client, prefix });
        const warnings: string[] = [];
        const overrides = new PolicyOverrides(store.overrides(), {
          pollMs: 100,
          onWarning: (m) => warnings.push(m),
        });
        await overrides.start();
        const limiter = new Limiter(store, POLICY, { overrides });
        return { client, overrides, limiter, warnings };
      }),
    );
  });

  afterEach(() => {
    for (const i of instances) i.overrides.stop();
    for (const c of clients) c.disconnect();
  });

  const limitIn = (i: (typeof instances)[number], key = 'k') =>
    i.overrides.effective(i.limiter.policy, [key])?.policy.limits[0]!.limit ?? POLICY.limit;

  /** Ms until every instance applies `limit`, or throws after `maxMs`. */
  const waitAll = async (limit: number, targets = instances, maxMs = 10_000) => {
    const t0 = performance.now();
    const seen: number[] = [];
    const pending = new Set(targets.map((_, i) => i));
    while (pending.size > 0) {
      for (const i of [...pending]) {
        if (limitIn(targets[i]!) === limit) {
          seen[i] = performance.now() - t0;
          pending.delete(i);
        }
      }
      if (pending.size === 0) break;
      if (performance.now() - t0 > maxMs) throw new Error(`not applied within ${maxMs} ms`);
      await sleep(2);
    }
    return seen;
  };

  it('a set on one instance is applied by every instance; p99 of propagation is bounded', async () => {
    const delays: number[] = [];
    for (let n = 0; n < 20; n++) {
      const writer = instances[n % 3]!;
      const limit = 10 + n;
      const t0 = performance.now();
      await writer.overrides.set(writer.limiter.policy, { limit }, { reason: `change ${n}` });
      const written = performance.now() - t0;
      const seen = await waitAll(limit);
      instances.forEach((_, i) => {
        if (i !== n % 3) delays.push(written + seen[i]!);
      });
      // decisions follow: a consume on any instance now runs under the new limit
      const d = await instances[(n + 1) % 3]!.limiter.consume(`key:${n}`);
      expect(d.limit).toBe(limit);
      await sleep(Math.floor(Math.random() * 100)); // changes land at random points of the poll
    }
    delays.sort((a, b) => a - b);
    const p50 = percentile(delays, 50);
    const p99 = percentile(delays, 99);
    console.log(
      `override propagation over ${delays.length} instance-changes (pollMs 100): p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${delays.at(-1)!.toFixed(1)} ms`,
    );
    expect(p99).toBeLessThan(5_000);
    // clearing propagates too
    await instances[0]!.overrides.clear('prop');
    await waitAll(POLICY.limit);
  }, 60_000);

  it('an instance whose Redis is unreachable keeps the overrides it last read (and warns), and picks up changes once back', async () => {
    const [a, b, c] = instances as [
      (typeof instances)[0],
      (typeof instances)[0],
      (typeof instances)[0],
    ];
    await a.overrides.set(a.limiter.policy, { limit: 9 });
    await waitAll(9);
    // c loses its Redis
    c.client.disconnect();
    await sleep(350); // a few polls fail
    expect(limitIn(c)).toBe(9);
    expect(c.warnings.join('\n')).toMatch(/could not read policy overrides/);
    // a change made meanwhile does not reach it, and what it had stays in force
    await b.overrides.set(b.limiter.policy, { limit: 3 });
    await waitAll(3, [a, b]);
    await sleep(250);
    expect(limitIn(c)).toBe(9);
    // back: it picks the change up
    await c.client.connect();
    const [ms] = await waitAll(3, [c]);
    console.log(`override picked up ${ms!.toFixed(1)} ms after the connection came back`);
    expect(ms!).toBeLessThan(5_000);
  }, 30_000);
});
