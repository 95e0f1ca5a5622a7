import { type Algorithm, Limiter, RedisStore, type Store } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { storageKey } from '../../lib/stores/storage-key.util';
import Redis from 'ioredis';
import { monotonicNow } from '../../lib/core/clock.util';
import { clusterSlot } from '../../lib/stores/cluster-slot.util';
import { backends, TestClock } from '../support/backends';
import { createTestClient, uniquePrefix, warmPool } from '../support/redis';

/**
 * Every operation a caller issues on one store takes effect in issue order, whatever coalescing
 * and the first measurement of the Redis clock do. The calls below are issued without awaiting
 * in between, as concurrent requests of one process issue them.
 */
const stores = backends('ordering', { uncoalesced: true });

const policy = (algorithm: Algorithm) => ({ name: 'order', algorithm, limit: 2, window: '1h' });

describe.each(stores)('$name store: operations take effect in issue order', (backend) => {
  describe.each([
    ['a controllable clock', () => new TestClock()],
    ['the store clock', () => undefined],
  ])('on %s', (_, clockFor) => {
    const make = (algorithm: Algorithm): Limiter =>
      new Limiter(backend.store(clockFor()), policy(algorithm));

    it.each(ALGORITHMS)(
      '%s: a refund issued after two consumes does not reach them first',
      async (algorithm) => {
        const limiter = make(algorithm);
        const a = await limiter.consume('k');
        const b = limiter.consume('k');
        const c = limiter.consume('k');
        const refund = limiter.refund(a);
        expect([(await b).allowed, (await c).allowed, await refund]).toEqual([true, false, true]);
        expect((await limiter.peek('k')).remaining).toBe(0);
      },
    );

    it.each(ALGORITHMS)('%s: a reset issued after two consumes clears both', async (algorithm) => {
      const limiter = make(algorithm);
      await limiter.peek('warm'); // something in flight or not: both must hold
      const spends = [limiter.consume('k'), limiter.consume('k')];
      const reset = limiter.reset('k');
      expect((await Promise.all(spends)).map((d) => d.allowed)).toEqual([true, true]);
      await reset;
      expect((await limiter.peek('k')).remaining).toBe(1);
    });

    it.each(ALGORITHMS)(
      '%s: on a fresh store, a peek issued after the first consume sees it',
      async (algorithm) => {
        const limiter = make(algorithm);
        const spent = limiter.consume('k');
        const peeked = limiter.peek('k');
        expect((await spent).allowed).toBe(true);
        expect((await peeked).remaining).toBe(0);
      },
    );

    it.each(ALGORITHMS)(
      '%s: on a fresh store, a reset issued after the first consume clears it',
      async (algorithm) => {
        const limiter = make(algorithm);
        const spent = limiter.consume('k');
        const reset = limiter.reset('k');
        expect((await spent).allowed).toBe(true);
        await reset;
        expect((await limiter.peek('k')).remaining).toBe(1);
      },
    );

    it('on a fresh store, a stack and a consume issued after the first consume follow it', async () => {
      const store: Store = backend.store(clockFor());
      const one = new Limiter(store, policy('fixed-window'));
      const other = new Limiter(store, { ...policy('sliding-window'), name: 'other' });
      const first = one.consume('k');
      const stacked = Limiter.consumeAll([
        { limiter: one, keys: 'k' },
        { limiter: other, keys: 'k' },
      ]);
      const third = one.consume('k');
      expect([(await first).allowed, (await stacked).allowed, (await third).allowed]).toEqual([
        true,
        true,
        false,
      ]);
    });
  });
});

describe('cluster store: a cross-slot spend is not overtaken on its later slots', () => {
  const onCluster = stores.find((b) => b.name === 'cluster');
  (onCluster ? it.each(ALGORITHMS) : it.skip.each(ALGORITHMS))(
    '%s: a reset and a consume issued after it wait for its later slot group',
    async (algorithm) => {
      const store = onCluster!.store(new TestClock()) as RedisStore;
      const limiter = new Limiter(store, policy(algorithm));
      const slot = (key: string) => clusterSlot(storageKey(store.prefix, key, 'order', 0));
      const [first, later] = ['ip:203.0.113.7', 'email:5f4dcc3b5aa765d6'].sort(
        (a, b) => slot(a) - slot(b),
      );
      const spent = limiter.consume([first!, later!]);
      const reset = limiter.reset(later!); // must clear the later group's spend too
      const next = limiter.consume(later!);
      expect((await spent).allowed).toBe(true);
      await reset;
      expect((await next).remaining).toBe(1);
      expect(await limiter.peek(later!)).toMatchObject({ allowed: true, remaining: 0 });
      expect(await limiter.peek(first!)).toMatchObject({ allowed: true, remaining: 0 });
    },
  );
});

describe('redis store: a failed first measurement of the Redis clock', () => {
  let client: Redis;
  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(async () => {
    await client.quit();
  });

  it('fails the spend that needed it; a peek issued behind it is still answered', async () => {
    // A client whose TIME fails (a timeout, a lost connection): every other command goes through.
    const call = client.call.bind(client) as (...args: unknown[]) => Promise<unknown>;
    const failing = new Proxy(client, {
      get(target, name, receiver) {
        if (name !== 'call') return Reflect.get(target, name, receiver) as unknown;
        return (command: string, ...args: unknown[]) =>
          command.toLowerCase() === 'time'
            ? Promise.reject(new Error('TIME failed'))
            : call(command, ...args);
      },
    });
    const store = new RedisStore({ client: failing, prefix: uniquePrefix('ordering-probe') });
    const request = {
      policy: 'order',
      algorithm: 'fixed-window' as const,
      limits: [{ limit: 2, windowMs: 3_600_000, burst: 2 }],
      keys: ['k'],
      cost: 1,
    };
    // The spend has a deadline: it needs the clock, so it and what follows are held for the probe.
    const spent = store.consume({ ...request, deadlineAt: monotonicNow() + 5_000 });
    const peeked = store.peek(request);
    const settled = await Promise.allSettled([spent, peeked]);
    expect(settled[0]).toMatchObject({ status: 'rejected', reason: { message: 'TIME failed' } });
    // Answered, and the failed spend charged nothing (a consume now would leave 1 of 2).
    expect(settled[1]).toMatchObject({
      status: 'fulfilled',
      value: { allowed: true, remaining: 1 },
    });
  });
});
