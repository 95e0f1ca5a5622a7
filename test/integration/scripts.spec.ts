import Redis from 'ioredis';
import { Limiter, RedisStore } from '../../lib';
import { ALGORITHMS } from '../../lib/core/policy';
import { storageKeys, storageKeysWithLedgers } from '../../lib/stores/storage-key.util';
import { TestClock } from '../support/backends';
import { startRedisServer, type StartedRedisServer } from '../support/redis';

/** Which arguments of each command the scripts use are keys. */
const KEY_ARGS: Record<string, (args: string[]) => string[]> = {
  get: (a) => [a[0]!],
  set: (a) => [a[0]!],
  incrby: (a) => [a[0]!],
  decrby: (a) => [a[0]!],
  pexpiretime: (a) => [a[0]!],
  del: (a) => a,
  exists: (a) => a,
  hget: (a) => [a[0]!],
  hdel: (a) => [a[0]!],
  hset: (a) => [a[0]!],
  hexists: (a) => [a[0]!],
  pexpire: (a) => [a[0]!],
  pexpireat: (a) => [a[0]!],
  zadd: (a) => [a[0]!],
  zrem: (a) => [a[0]!],
  zcount: (a) => [a[0]!],
  zscore: (a) => [a[0]!],
  zmscore: (a) => [a[0]!],
  zrange: (a) => [a[0]!],
  zcard: (a) => [a[0]!],
  zpopmin: (a) => [a[0]!],
  zrangebyscore: (a) => [a[0]!],
  zrevrangebyscore: (a) => [a[0]!],
  zremrangebyscore: (a) => [a[0]!],
  time: () => [],
};

interface ScriptRun {
  declared: string[];
  touched: Array<{ command: string; keys: string[] }>;
}

describe('scripts on a dedicated Redis, watched with MONITOR', () => {
  let server: StartedRedisServer;
  let client: Redis;
  let monitorBase: Redis;
  let monitor: Awaited<ReturnType<Redis['monitor']>>;
  let fences = 0;
  const lines: Array<{ args: string[]; source: string }> = [];

  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
    monitorBase = new Redis(server.url);
    // Both connections ready (their ready checks sent an INFO each) before MONITOR starts: an INFO
    // still in flight when it starts reached the monitor connection as a reply it did not expect
    // (ioredis: "Command queue state error").
    await Promise.all([client.ping(), monitorBase.ping()]);
    monitor = await monitorBase.monitor();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      lines.push({ args, source });
    });
  });
  afterAll(async () => {
    monitor.disconnect();
    monitorBase.disconnect();
    await client.quit();
    await server.stop();
  });

  /** Sends a marker command and waits until MONITOR has delivered it (and all before it). */
  async function fence(): Promise<string> {
    const marker = `monitor:fence:${++fences}`;
    await client.set(marker, '1');
    for (let i = 0; i < 400 && !lines.some((l) => l.args[1] === marker); i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return marker;
  }

  /** Runs `work`, then returns the script runs MONITOR saw (commands from the client included). */
  async function watch(
    work: () => Promise<void>,
  ): Promise<{ runs: ScriptRun[]; commands: string[] }> {
    const start = await fence();
    await work();
    const end = await fence();
    const from = lines.findIndex((l) => l.args[1] === start) + 1;
    const to = lines.findIndex((l) => l.args[1] === end);
    const window = lines.slice(from, to);
    const runs: ScriptRun[] = [];
    const commands: string[] = [];
    for (const { args, source } of window) {
      const [name = '', ...rest] = args;
      const command = name.toLowerCase();
      if (source === 'lua') {
        const keysOf = KEY_ARGS[command];
        if (!keysOf) throw new Error(`a script ran ${command}: add it to KEY_ARGS`);
        runs.at(-1)!.touched.push({ command, keys: keysOf(rest) });
        continue;
      }
      commands.push(command);
      if (command === 'evalsha' || command === 'eval' || command === 'fcall') {
        const numKeys = Number(rest[1]);
        runs.push({ declared: rest.slice(2, 2 + numKeys), touched: [] });
      }
    }
    return { runs, commands };
  }

  describe.each(ALGORITHMS)('%s', (algorithm) => {
    it('touches only keys declared in KEYS, in every operation', async () => {
      const clock = new TestClock();
      const store = new RedisStore({ client, prefix: `declared:${algorithm}:`, clock: clock.read });
      const limiter = new Limiter(store, {
        name: 'p',
        algorithm,
        limits: [
          { limit: 3, window: '1m' },
          { limit: 5, window: '1h' },
        ],
      });
      await limiter.peek('warm'); // the library loaded
      const { runs } = await watch(async () => {
        const first = await limiter.consume(['ip:1', 'email:x'], { cost: 2 });
        await limiter.consume(['ip:1', 'email:x'], { cost: 2 }); // refused
        await limiter.peek(['ip:1', 'email:y']);
        await limiter.refund(first);
        const second = await limiter.consume(['ip:1']);
        clock.advance(61_000);
        await limiter.consume(['ip:1']);
        await limiter.refund(second); // into a window that has passed
      });
      expect(runs).toHaveLength(7);
      for (const run of runs) {
        expect(run.touched.length).toBeGreaterThan(0);
        for (const { keys } of run.touched) {
          for (const key of keys) expect(run.declared).toContain(key);
        }
      }
      const written = runs.flatMap((r) =>
        r.touched.filter((t) =>
          ['set', 'incrby', 'decrby', 'del', 'zadd', 'zrem'].includes(t.command),
        ),
      );
      expect(written.length).toBeGreaterThan(0); // the workload did write
    });

    it('decides in one round trip, and recovers from a function flush once, without a double spend', async () => {
      const store = new RedisStore({ client, prefix: `noscript:${algorithm}:` });
      const limiter = new Limiter(store, { name: 'p', algorithm, limit: 3, window: '1h' });
      await limiter.consume('k');
      const steady = await watch(async () => void (await limiter.consume('k')));
      expect(steady.commands).toEqual(['fcall']);
      expect(steady.runs).toHaveLength(1);

      await client.script('FLUSH'); // functions are not scripts: nothing to recover
      expect((await watch(async () => void (await limiter.peek('k')))).commands).toEqual(['fcall']);

      await client.function('FLUSH');
      let decision: Awaited<ReturnType<Limiter['consume']>> | undefined;
      const flushed = await watch(async () => void (decision = await limiter.consume('k')));
      // The call found no function (it did not run), the library was loaded, the call sent again.
      expect(flushed.commands).toEqual(['fcall', 'function', 'fcall']);
      expect(decision?.allowed).toBe(true);
      expect(decision?.remaining).toBe(0); // 3 spends, each counted once
      expect((await limiter.consume('k')).allowed).toBe(false);
    });

    it('where functions are not permitted, runs as scripts and recovers from a script flush once', async () => {
      const user = `noscripts-${algorithm}`;
      await client.acl('SETUSER', user, 'on', 'nopass', '~*', '&*', '+@all', '-function', '-fcall');
      const restricted = new Redis(server.url, { username: user, password: 'any' });
      try {
        const store = new RedisStore({ client: restricted, prefix: `acl:${algorithm}:` });
        const limiter = new Limiter(store, { name: 'p', algorithm, limit: 3, window: '1h' });
        await limiter.consume('k'); // FCALL refused by the ACL: scripts from then on
        const steady = await watch(async () => void (await limiter.consume('k')));
        expect(steady.commands).toEqual(['evalsha']);
        await client.script('FLUSH');
        let decision: Awaited<ReturnType<Limiter['consume']>> | undefined;
        const flushed = await watch(async () => void (decision = await limiter.consume('k')));
        expect(flushed.commands).toEqual(['evalsha', 'eval']);
        expect(decision?.allowed).toBe(true);
        expect(decision?.remaining).toBe(0);
        expect((await limiter.consume('k')).allowed).toBe(false);
      } finally {
        restricted.disconnect();
        await client.acl('DELUSER', user);
      }
    });
  });

  it('a coalesced batch of every algorithm touches only declared keys, in one script run', async () => {
    const clock = new TestClock();
    const store = new RedisStore({ client, prefix: 'declared:batch:', clock: clock.read });
    const limiters = ALGORITHMS.map(
      (algorithm) => new Limiter(store, { name: algorithm, algorithm, limit: 2, window: '1m' }),
    );
    await Promise.all(limiters.map((l) => l.peek('warm'))); // loads the library
    const { runs, commands } = await watch(async () => {
      // The first goes alone (nothing in flight); the other 14 go as one batch (at most 16).
      await Promise.all(
        limiters.flatMap((l) => [
          l.consume(['ip:1', 'email:x']),
          l.consume('ip:1'),
          l.peek('ip:1'),
        ]),
      );
    });
    expect(commands).toEqual(['fcall', 'fcall']);
    for (const run of runs) {
      for (const { keys } of run.touched) {
        for (const key of keys) expect(run.declared).toContain(key);
      }
    }
    expect(runs[1]!.declared.length).toBeGreaterThan(10);
  });

  it('a stack of every algorithm touches only declared keys, in one script run per decision', async () => {
    const clock = new TestClock();
    const store = new RedisStore({ client, prefix: 'declared:stack:', clock: clock.read });
    const limiters = ALGORITHMS.map(
      (algorithm) =>
        new Limiter(store, {
          name: algorithm,
          algorithm,
          limits: [
            { limit: 3, window: '1m' },
            { limit: 5, window: '1h' },
          ],
        }),
    );
    const parts = limiters.map((limiter, i) => ({
      limiter,
      keys: i % 2 ? ['ip:1', 'email:x'] : 'ip:1',
      cost: 1 + (i % 2),
    }));
    await Limiter.peekAll(parts); // loads the library
    const { runs, commands } = await watch(async () => {
      const first = await Limiter.consumeAll(parts);
      await Limiter.consumeAll(parts);
      await Limiter.consumeAll(parts); // refused
      await Limiter.peekAll(parts);
      await Limiter.refundAll(first);
    });
    // 3 consumeAll + 1 peekAll, one round trip each; then one refund script run per part.
    expect(commands.slice(0, 4)).toEqual(['fcall', 'fcall', 'fcall', 'fcall']);
    expect(runs.slice(4).filter((run) => run.touched.length > 0)).toHaveLength(limiters.length);
    for (const run of runs) {
      for (const { keys } of run.touched) {
        for (const key of keys) expect(run.declared).toContain(key);
      }
    }
    const written = runs
      .slice(0, 2)
      .flatMap((r) => r.touched.filter((t) => ['set', 'incrby', 'zadd'].includes(t.command)));
    expect(written.length).toBeGreaterThanOrEqual(limiters.length * 2);
    expect(runs[2]!.touched.some((t) => ['set', 'incrby', 'zadd', 'del'].includes(t.command))).toBe(
      false,
    ); // the refusal wrote nothing
  });

  it('reset deletes exactly the keys of that policy and those caller keys (lockouts too), in one script run', async () => {
    const store = new RedisStore({ client, prefix: 'reset:' });
    const limiter = new Limiter(store, {
      name: 'p',
      algorithm: 'fixed-window',
      limits: [
        { limit: 3, window: '1m' },
        { limit: 5, window: '1h' },
      ],
    });
    await limiter.reset(['warm']); // library loaded
    const { commands, runs } = await watch(() => limiter.reset(['a', 'b']));
    expect(commands).toEqual(['fcall']);
    expect(runs[0]!.declared).toEqual(storageKeysWithLedgers('reset:', ['a', 'b'], 'p', 2, true));
    const deleted = runs[0]!.touched.filter((t) => t.command === 'del').flatMap((t) => t.keys);
    expect(deleted).toEqual([
      ...storageKeys('reset:', ['a'], 'p', 2),
      'reset:{a}:p:b',
      ...storageKeys('reset:', ['b'], 'p', 2),
      'reset:{b}:p:b',
    ]);
  });
});
