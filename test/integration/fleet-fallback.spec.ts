// failMode 'memory' used to decide in each process's own MemoryStore while Redis was away, so N
// processes admitted up to N × the limit (for sign-in: N × the password guesses during every outage
// an attacker can provoke). Now processes announce themselves in Redis while it is healthy, the
// fallback gives each its share of every limit (the shares of a fleet add up to the limit), and
// what the fallback allowed is charged into Redis, in the window where it was made, once Redis is
// back. Four stores stand for four processes, each with its own connection through a proxy that
// can cut them all (an outage) and let them through again.
import Redis from 'ioredis';
import { type Decision, Limiter, RedisStore } from '../../lib';
import type { Algorithm } from '../../lib/core/policy';
import { TestClock } from '../support/backends';
import { lossyProxy, type LossyProxy } from '../support/lossy-proxy';
import { startRedisServer, type StartedRedisServer } from '../support/redis';
import { until } from '../support/until';

const BEAT_MS = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("failMode 'memory': the fleet's limit holds while Redis is away", () => {
  let server: StartedRedisServer;
  let check: Redis;
  let proxy: LossyProxy;
  const open: Redis[] = [];
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    server = await startRedisServer();
    check = new Redis(server.url);
  });
  afterAll(async () => {
    check.disconnect();
    await server.stop();
  });
  beforeEach(async () => {
    proxy = await lossyProxy(server.port);
  });
  afterEach(async () => {
    proxy.up();
    await Promise.all(stores.splice(0).map((s) => s.leaveFleet().catch(() => undefined)));
    for (const c of open.splice(0)) c.disconnect();
    await proxy.close();
  });

  /** `n` processes' stores on one prefix, each with its own connection through the proxy. */
  function fleet(n: number, prefix: string, clock?: TestClock): RedisStore[] {
    return fleetVia(proxy, n, prefix, clock);
  }

  function fleetVia(via: LossyProxy, n: number, prefix: string, clock?: TestClock): RedisStore[] {
    return Array.from({ length: n }, () => {
      const client = new Redis(via.port, {
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
        retryStrategy: () => 20,
      });
      open.push(client);
      const store = new RedisStore({
        client,
        prefix,
        fleetBeatMs: BEAT_MS,
        ...(clock && { clock: () => clock.now }),
      });
      stores.push(store);
      return store;
    });
  }

  /** Every store has seen the whole fleet and has been in it for a beat interval. */
  async function established(members: RedisStore[]): Promise<void> {
    await until(async () => {
      await Promise.all(members.map((s) => s.heartbeat().catch(() => undefined)));
      return members.every(
        (s) => s.fleet.view?.established && s.fleet.view.size === members.length,
      );
    });
  }

  /** Every connection is cut and every store has noticed (a command fails). */
  async function outage(members: RedisStore[], via: LossyProxy = proxy): Promise<void> {
    via.down();
    await until(async () => {
      const failed = await Promise.all(
        members.map((s) =>
          s.heartbeat().then(
            () => false,
            () => true,
          ),
        ),
      );
      return failed.every(Boolean);
    });
  }

  async function recovery(members: RedisStore[]): Promise<void> {
    proxy.up();
    await until(async () => {
      const ok = await Promise.all(
        members.map((s) =>
          s.heartbeat().then(
            () => true,
            () => false,
          ),
        ),
      );
      return ok.every(Boolean);
    });
  }

  const limiters = (members: RedisStore[], policy: object) =>
    members.map(
      (store) =>
        new Limiter(store, { name: 'login', failMode: 'memory', ...policy } as never, {
          timeoutMs: 500,
          onStoreFailure: () => undefined,
        }),
    );

  it.each(['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'gcra'] as Algorithm[])(
    '%s: 4 processes admit the limit between them during an outage, and it is charged into Redis after',
    async (algorithm) => {
      const clock = new TestClock();
      const members = fleet(4, `fleet:${algorithm}:${Math.random()}:`, clock);
      const all = limiters(members, { algorithm, limit: 10, window: '1h' });
      await Promise.all(all.map((l) => l.consume('warm')));
      await established(members);
      await outage(members);
      const decisions: Decision[] = [];
      for (let i = 0; i < 60; i++) decisions.push(await all[i % 4]!.consume('victim'));
      expect(decisions.every((d) => d.failure?.failMode === 'memory')).toBe(true);
      // Shares 3, 3, 2, 2 (ranks in byte order of the members' names): 10 between them.
      expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
      await recovery(members);
      await until(() => members.every((s) => s.fleet.owing === 0));
      // Redis holds the 10 the fallback allowed: the caller gets no fresh budget.
      const back = await all[0]!.consume('victim');
      expect(back.failure).toBeUndefined();
      expect(back.allowed).toBe(false);
      expect(members.reduce((sum, s) => sum + s.fleet.reconciled, 0)).toBe(10);
    },
  );

  it('a limit smaller than the fleet: the first ranks get 1 each, the others refuse; 2 in all', async () => {
    const members = fleet(4, `fleet:small:${Math.random()}:`);
    const all = limiters(members, { algorithm: 'fixed-window', limit: 2, window: '1h' });
    await established(members);
    await outage(members);
    let allowed = 0;
    for (let i = 0; i < 40; i++) if ((await all[i % 4]!.consume('victim')).allowed) allowed++;
    expect(allowed).toBe(2);
  });

  it('a process that never saw the fleet (Redis away since it started) refuses', async () => {
    proxy.down();
    const [store] = fleet(1, `fleet:never:${Math.random()}:`);
    const [limiter] = limiters([store!], { algorithm: 'fixed-window', limit: 100, window: '1h' });
    const decision = await limiter!.consume('k');
    expect(decision.failure?.failMode).toBe('memory');
    expect(decision.allowed).toBe(false);
    expect(store!.fleet.view).toBeUndefined();
  });

  it('a process that joined less than a beat ago takes no share: the older members do not count it yet', async () => {
    const prefix = `fleet:join:${Math.random()}:`;
    const [first] = fleet(1, prefix);
    const [firstLimiter] = limiters([first!], {
      algorithm: 'fixed-window',
      limit: 4,
      window: '1h',
    });
    await established([first!]);
    const [late] = fleet(1, prefix);
    const [lateLimiter] = limiters([late!], { algorithm: 'fixed-window', limit: 4, window: '1h' });
    await until(() =>
      late!.heartbeat().then(
        () => true,
        () => false,
      ),
    ); // joined, not established
    expect(late!.fleet.view?.established).toBe(false);
    await outage([first!, late!]);
    let allowed = 0;
    for (let i = 0; i < 10; i++) if ((await lateLimiter!.consume('victim')).allowed) allowed++;
    for (let i = 0; i < 10; i++) if ((await firstLimiter!.consume('victim')).allowed) allowed++;
    expect(allowed).toBeLessThanOrEqual(4);
  });

  it('a process that joined while a member could not beat takes no share until that member has beaten since', async () => {
    const prefix = `fleet:unseen:${Math.random()}:`;
    const cutOff = await lossyProxy(server.port);
    try {
      const [a] = fleetVia(cutOff, 1, prefix);
      const [b] = fleet(1, prefix);
      await established([a!, b!]);
      await outage([a!], cutOff); // a's beats fail: its view (a, b) stays, and so does its place
      const [c] = fleet(1, prefix);
      for (let i = 0; i < 5; i++) {
        await until(() =>
          c!.heartbeat().then(
            () => true,
            () => false,
          ),
        );
        await b!.heartbeat();
      }
      expect(c!.fleet.view).toMatchObject({ size: 3, established: false }); // a never saw c
      const policy = { algorithm: 'fixed-window', limit: 10, window: '1h' };
      const all = limiters([a!, b!, c!], policy);
      await outage([b!, c!]);
      let allowed = 0;
      for (let i = 0; i < 60; i++) if ((await all[i % 3]!.consume('victim')).allowed) allowed++;
      expect(allowed).toBeLessThanOrEqual(10); // a: 5 of 2, b: 3 or 4 of 3, c: none
    } finally {
      cutOff.up();
      await cutOff.close();
    }
  });

  it('a fallback spend refunded before Redis is back is never charged; one refunded after is given back there', async () => {
    const members = fleet(1, `fleet:refund:${Math.random()}:`);
    const [limiter] = limiters(members, { algorithm: 'fixed-window', limit: 5, window: '1h' });
    await established(members);
    await outage(members);
    const a = await limiter!.consume('k');
    const b = await limiter!.consume('k');
    const c = await limiter!.consume('k');
    expect([a.allowed, b.allowed, c.allowed]).toEqual([true, true, true]);
    expect(await limiter!.refund(a)).toBe(true);
    await recovery(members);
    await until(() => members[0]!.fleet.owing === 0);
    // (A peek's remaining counts the unit it asks about.) b and c charged, a never.
    expect((await limiter!.peek('k')).remaining).toBe(2);
    // b refunded now: given back in Redis too; a copy of its receipt gives nothing more.
    expect(await limiter!.refund(b)).toBe(true);
    await until(async () => (await limiter!.peek('k')).remaining === 3);
    await limiter!.refund(JSON.parse(JSON.stringify(b)) as typeof b);
    await members[0]!.heartbeat();
    expect((await limiter!.peek('k')).remaining).toBe(3);
  });

  it('the first decision Redis answers again starts the charging, without waiting for a beat', async () => {
    const client = new Redis(proxy.port, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      retryStrategy: () => 20,
    });
    open.push(client);
    // Beats a minute apart: only heartbeat() calls of the test beat.
    const store = new RedisStore({
      client,
      prefix: `fleet:kick:${Math.random()}:`,
      fleetBeatMs: 60_000,
    });
    stores.push(store);
    const [limiter] = limiters([store], { algorithm: 'fixed-window', limit: 5, window: '1h' });
    await established([store]);
    await outage([store]);
    expect((await limiter!.consume('k')).allowed).toBe(true);
    expect((await limiter!.consume('k')).allowed).toBe(true);
    proxy.up();
    await until(() => client.status === 'ready');
    const first = await limiter!.consume('other');
    expect(first.failure).toBeUndefined();
    await until(() => store.fleet.owing === 0);
    expect(store.fleet.reconciled).toBe(2);
  });

  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: fallback spends charged together, then one refunded after the recovery: given back in Redis',
    async (algorithm) => {
      const clock = new TestClock();
      const members = fleet(1, `fleet:bucket-refund:${algorithm}:${Math.random()}:`, clock);
      const [limiter] = limiters(members, { algorithm, limit: 10, window: '1h' });
      await established(members);
      await outage(members);
      const spent: Decision[] = [];
      for (let i = 0; i < 4; i++) spent.push(await limiter!.consume('k'));
      expect(spent.every((d) => d.allowed)).toBe(true);
      await recovery(members);
      await until(() => members[0]!.fleet.owing === 0);
      expect((await limiter!.peek('k')).remaining).toBe(5); // 10 − 4, less the unit peeked
      expect(await limiter!.refund(spent[3]!)).toBe(true);
      await until(async () => (await limiter!.peek('k')).remaining === 6);
      await members[0]!.heartbeat();
      expect((await limiter!.peek('k')).remaining).toBe(6);
    },
  );

  it('a fallback spend whose window ended before Redis came back is not charged', async () => {
    const clock = new TestClock();
    const members = fleet(1, `fleet:window:${Math.random()}:`, clock);
    const [limiter] = limiters(members, { algorithm: 'fixed-window', limit: 5, window: '1m' });
    await established(members);
    await outage(members);
    expect((await limiter!.consume('k')).allowed).toBe(true);
    clock.advance(60_000);
    await recovery(members);
    await until(() => members[0]!.fleet.owing === 0);
    expect((await limiter!.peek('k')).remaining).toBe(4); // full: 5 less the unit peeked
  });

  it('fleetBeatMs out of range is a RangeError naming it', () => {
    expect(() => new RedisStore({ client: check, fleetBeatMs: 50 })).toThrow(/fleetBeatMs/);
    expect(() => new RedisStore({ client: check, fleetBeatMs: 1.5 })).toThrow(/fleetBeatMs/);
  });

  it('leaving the fleet: the others count one fewer at their next beat', async () => {
    const members = fleet(2, `fleet:leave:${Math.random()}:`);
    limiters(members, { algorithm: 'fixed-window', limit: 5, window: '1h' });
    await established(members);
    await members[1]!.leaveFleet();
    await members[0]!.heartbeat();
    expect(members[0]!.fleet.view?.size).toBe(1);
    await sleep(1);
  });
});
