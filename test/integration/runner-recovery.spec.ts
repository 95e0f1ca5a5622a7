/**
 * The script runner when calls do not run (functions denied by an ACL, the library missing,
 * Redis out of memory) and the limiter's one timer: each spec against a real (throwaway) Redis.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import Redis, { Command } from 'ioredis';
import { type Decision, Limiter, RedisStore } from '../../lib';
import type { SpendRequest, SpendResult } from '../../lib/stores/store.interface';
import { scriptLibrary } from '../../lib/stores/scripts';
import { TestClock } from '../support/backends';
import { startRedisServer, type StartedRedisServer } from '../support/redis';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A client that, right after the next FCALL it writes, writes one more command of our choosing on
 * the same connection: Redis then runs it between that FCALL and whatever the client sends next.
 */
class InjectingRedis extends Redis {
  afterNextFcall?: () => Command;
  beforeNextFcall?: () => Command;

  override sendCommand(command: Command, stream?: Parameters<Redis['sendCommand']>[1]): unknown {
    if (command.name === 'fcall' && this.beforeNextFcall) {
      const extra = this.beforeNextFcall();
      this.beforeNextFcall = undefined;
      extra.promise.catch(() => undefined);
      void super.sendCommand(extra, stream);
    }
    const result = super.sendCommand(command, stream);
    if (command.name === 'fcall' && this.afterNextFcall) {
      const extra = this.afterNextFcall();
      this.afterNextFcall = undefined;
      extra.promise.catch(() => undefined);
      void super.sendCommand(extra, stream);
    }
    return result;
  }
}

/** User `lim` (password `pw`) may run anything but FCALL, FCALL_RO and FUNCTION. */
const denyFunctions = (admin: Redis) =>
  admin.call(
    'ACL',
    'SETUSER',
    'lim',
    'on',
    '>pw',
    '~*',
    '&*',
    '+@all',
    '-fcall',
    '-fcall_ro',
    '-function',
  );

const policy = (limit: number) =>
  ({ name: 'p', algorithm: 'fixed-window', limit, window: '1h' }) as const;

describe('calls that did not run, and the limiter’s timer', () => {
  let server: StartedRedisServer;
  let admin: Redis;
  beforeEach(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
  });
  afterEach(async () => {
    admin.disconnect();
    await server.stop();
  });

  it('NOPERM on FCALL: every call in flight when the runner falls back to EVALSHA is decided, none fails', async () => {
    await denyFunctions(admin);
    const client = new Redis(server.url, { username: 'lim', password: 'pw' });
    try {
      const limiter = new Limiter(
        new RedisStore({ client, prefix: 'acl:', coalesce: false }),
        policy(100),
        { onStoreFailure: () => undefined },
      );
      // Held behind the first measurement of the Redis clock, then sent together: all FCALLs are
      // in flight when the first NOPERM comes back.
      const decisions = await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')));
      expect(decisions.map((d) => d.failure?.error.message)).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
      expect(decisions.every((d) => d.allowed)).toBe(true);
    } finally {
      client.disconnect();
    }
  });

  it('NOPERM on FCALL with coalescing on: the batch in flight behind the first call is decided too', async () => {
    await denyFunctions(admin);
    const client = new InjectingRedis(server.url, { username: 'lim', password: 'pw' });
    try {
      const limiter = new Limiter(new RedisStore({ client, prefix: 'acl2:' }), policy(100), {
        onStoreFailure: () => undefined,
      });
      // Hold the connection so the first FCALL's NOPERM cannot come back before the batch behind
      // it is written.
      client.beforeNextFcall = () => new Command('blpop', ['acl2:unblock', '0']);
      const first = limiter.consume('k');
      await sleep(20); // the first call is written (and blocks the connection behind it)
      const rest = Array.from({ length: 4 }, () => limiter.consume('k'));
      await sleep(20); // the batch of the rest is written behind it
      await admin.lpush('acl2:unblock', 'go');
      const decisions = await Promise.all([first, ...rest]);
      expect(decisions.map((d) => d.failure?.error.message)).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
    } finally {
      client.disconnect();
    }
  });

  it('library loaded by another process between a miss and a later call: the earlier call still takes effect first', async () => {
    const client = new InjectingRedis(server.url);
    try {
      const limiter = new Limiter(
        new RedisStore({ client, prefix: 'order:', coalesce: false }),
        policy(1),
      );
      await limiter.peek('warm'); // the library loaded, the clock measured
      await admin.call('FUNCTION', 'FLUSH');
      // Another process (here: the same connection, so it lands exactly there) loads the
      // library right after A arrived and missed, before B arrives.
      client.afterNextFcall = () => new Command('function', ['LOAD', scriptLibrary().source]);
      const a = limiter.consume('k'); // issued first
      const b = limiter.consume('k'); // issued second
      const [da, db] = await Promise.all([a, b]);
      // A must not take effect after B: either in issue order (A allowed, B refused), or A not
      // at all (failed as a store error rather than retried behind a later call that ran).
      expect({ a: da.allowed, aFailed: da.failure !== undefined, b: db.allowed }).toEqual(
        da.failure !== undefined
          ? { a: da.allowed, aFailed: true, b: db.allowed }
          : { a: true, aFailed: false, b: false },
      );
    } finally {
      client.disconnect();
    }
  });

  it('a call issued while the library loads does not overtake a call sent before it that has not missed yet', async () => {
    const client = new InjectingRedis(server.url);
    try {
      const store = new RedisStore({ client, prefix: 'order2:', coalesce: false });
      const limiter = new Limiter(store, policy(2));
      await limiter.peek('warm');
      await admin.call('FUNCTION', 'FLUSH');
      // A, then a BLPOP that holds the connection, then B: A's miss comes back (the load starts,
      // queued behind B), B's miss only once the BLPOP is released.
      client.afterNextFcall = () => new Command('blpop', ['order2:unblock', '0']);
      const a = limiter.consume('k');
      const b = limiter.consume('k');
      const runner = (store as unknown as { scripts: { recovery?: unknown } }).scripts;
      for (let i = 0; i < 200 && runner.recovery === undefined; i++) await sleep(5);
      expect(runner.recovery).toBeDefined(); // A missed: the runner is recovering
      const c = limiter.consume('k'); // issued last: waits for the load
      await sleep(20);
      await admin.lpush('order2:unblock', 'go');
      const [da, db, dc] = await Promise.all([a, b, c]);
      expect([da.allowed, db.allowed, dc.allowed]).toEqual([true, true, false]); // issue order
    } finally {
      client.disconnect();
    }
  });

  it('FCALL refused (NOPERM), then permitted, while a later call is in flight: the first fails or takes effect first', async () => {
    await admin.call('FUNCTION', 'LOAD', scriptLibrary().source);
    await denyFunctions(admin);
    const client = new InjectingRedis(server.url, { username: 'lim', password: 'pw' });
    try {
      const limiter = new Limiter(
        new RedisStore({ client, prefix: 'order3:', clock: new TestClock().read, coalesce: false }),
        policy(1),
        { onStoreFailure: () => undefined },
      );
      // A's FCALL is refused at once; a BLPOP behind it holds B's FCALL in flight on the
      // connection while the runner recovers from A's refusal.
      client.afterNextFcall = () => new Command('blpop', ['order3:unblock', '0']);
      const a = limiter.consume('k'); // issued first
      const b = limiter.consume('k'); // issued second: in flight when A's NOPERM comes back
      await sleep(50);
      // Functions are permitted again before B runs: B takes effect as an FCALL.
      await admin.call('ACL', 'SETUSER', 'lim', '+fcall', '+fcall_ro', '+function');
      await admin.lpush('order3:unblock', 'go');
      const [da, db] = await Promise.all([a, b]);
      // A sent again before B answered would run after B (on the connection behind it): B
      // allowed, A refused. A must fail instead (B took effect first), or take effect first.
      expect({ a: da.allowed, aFailed: da.failure !== undefined, b: db.allowed }).toEqual(
        da.failure !== undefined
          ? { a: da.allowed, aFailed: true, b: db.allowed }
          : { a: true, aFailed: false, b: false },
      );
    } finally {
      client.disconnect();
    }
  });

  it('Redis out of memory (noeviction): a refusal and a peek are still answered, as with EVAL scripts', async () => {
    const client = new Redis(server.url);
    try {
      const limiter = new Limiter(new RedisStore({ client, prefix: 'oom:' }), policy(1), {
        onStoreFailure: () => undefined,
      });
      expect((await limiter.consume('k')).allowed).toBe(true); // the budget is spent
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '1');
      try {
        // Neither writes anything: a refusal leaves state as it was, a peek only reads.
        const refused = await limiter.consume('k');
        const peeked = await limiter.peek('k');
        expect(refused.failure?.error.message).toBeUndefined();
        expect(refused.allowed).toBe(false);
        expect(peeked.failure?.error.message).toBeUndefined();
        expect(peeked.allowed).toBe(false);
      } finally {
        await admin.config('SET', 'maxmemory', '0');
      }
    } finally {
      client.disconnect();
    }
  });

  it('timeoutMs beyond 2^31 - 1 ms (setTimeout would fire after 1 ms) is refused by the constructor', () => {
    const client = new Redis(server.url, { lazyConnect: true });
    expect(
      () =>
        new Limiter(new RedisStore({ client, prefix: 'long:' }), policy(10), {
          timeoutMs: 3_000_000_000,
        }),
    ).toThrow(/timeoutMs must be at most 2147483647/);
    client.disconnect();
  });

  it('an answered decision is not retained by its limiter until its timeout passes', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const client = new Redis(server.url);
    try {
      const refs: Array<WeakRef<SpendResult>> = [];
      class Recording extends RedisStore {
        override async consume(request: SpendRequest): Promise<SpendResult> {
          const result = await super.consume(request);
          refs.push(new WeakRef(result));
          return result;
        }
      }
      const store = new Recording({ client, prefix: 'heap:' });
      const heapPolicy = {
        name: 'p',
        algorithm: 'fixed-window',
        limit: 1_000_000,
        window: '1h',
      } as const;
      await new Limiter(store, heapPolicy).peek('warm'); // the library loaded, the clock measured
      const limiter = new Limiter(store, heapPolicy, { timeoutMs: 60_000 });
      let decisions: Decision[] | undefined = await Promise.all(
        Array.from({ length: 200 }, (_, i) => limiter.consume(`k${i % 10}`)),
      );
      expect(decisions.every((d) => d.allowed)).toBe(true);
      decisions = undefined;
      await sleep(10);
      gc();
      await sleep(10);
      gc();
      const alive = refs.filter((r) => r.deref() !== undefined).length;
      expect(alive).toBe(0);
    } finally {
      client.disconnect();
    }
  });
});
