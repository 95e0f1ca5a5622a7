import Redis, { Command } from 'ioredis';
import { type Decision, Limiter, RedisStore } from '../../lib';
import { startRedisServer } from '../support/redis';
import { spawnRedisServer } from '../support/redis-server';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Units the stored fixed-window counters of `prefix` hold, summed. */
async function storedCount(client: Redis, prefix: string): Promise<number> {
  // (outcome markers, `{…}!<spend id>`, hold instants, not units)
  const keys = (await client.keys(`${prefix}*`)).filter((k) => !k.includes('}!'));
  const values = keys.length ? await client.mget(...keys) : [];
  return values.reduce((sum, v) => sum + Number(v ?? 0), 0);
}

/**
 * A client that sends FUNCTION FLUSH on its own connection just before chosen function calls
 * (counted from 1 over every FCALL it is asked to send, retries included), so a flush lands
 * exactly between two commands. Keeps every FCALL and FUNCTION command it sent, to check the order
 * really happened.
 */
class FlushingRedis extends Redis {
  readonly flushBefore = new Set<number>();
  readonly scriptCalls: Command[] = [];
  private fcalls = 0;

  override sendCommand(command: Command, stream?: Parameters<Redis['sendCommand']>[1]): unknown {
    if (command.name === 'fcall') {
      if (this.flushBefore.has(++this.fcalls))
        void super.sendCommand(new Command('function', ['FLUSH']), stream);
    }
    if (command.name === 'fcall' || command.name === 'function') this.scriptCalls.push(command);
    return super.sendCommand(command, stream);
  }
}

describe('recovery', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeAll(() => process.on('unhandledRejection', onUnhandled));
  afterAll(() => process.off('unhandledRejection', onUnhandled));
  afterEach(() => expect(unhandled).toEqual([]));

  it.each(['SCRIPT', 'FUNCTION'])(
    '%s FLUSH during traffic: no error reaches a caller, and nothing is spent twice',
    async (what) => {
      const server = await startRedisServer();
      const client = new Redis(server.url);
      const admin = new Redis(server.url);
      try {
        const limiter = new Limiter(new RedisStore({ client, prefix: 'flush:' }), {
          name: 'p',
          algorithm: 'fixed-window',
          limit: 150,
          window: '1h',
        });
        const decisions: Decision[] = [];
        for (let batch = 0; batch < 4; batch++) {
          const burst = Array.from({ length: 50 }, (_, i) => limiter.consume(`k${i % 5}`));
          // Lands during the burst or just after it (the next burst then meets it): either way a
          // flush can fall between a miss and its retry.
          await admin.call(what, 'FLUSH');
          decisions.push(...(await Promise.all(burst)));
        }
        expect(decisions.filter((d) => d.failure)).toEqual([]);
        expect(decisions.every((d) => d.allowed)).toBe(true);
        expect(await storedCount(admin, 'flush:')).toBe(200);
      } finally {
        client.disconnect();
        admin.disconnect();
        await server.stop();
      }
    },
  );

  it('a second function flush between a miss and its retry: every call still runs, once', async () => {
    const server = await startRedisServer();
    const client = new FlushingRedis(server.url);
    try {
      // Not coalesced: A and B must leave in the same write, as separate commands.
      const store = new RedisStore({ client, prefix: 'twice:', coalesce: false });
      const limiter = new Limiter(store, {
        name: 'p',
        algorithm: 'fixed-window',
        limit: 10,
        window: '1h',
      });
      expect((await limiter.consume('warm')).allowed).toBe(true); // the library loaded
      const first = client.scriptCalls.length;
      const fcalls = client.scriptCalls.filter((c) => c.name === 'fcall').length;
      // A and B find no function; the library is loaded; a flush lands before A's retry, so A and
      // B miss again; the library is loaded once more and both go through.
      client.flushBefore.add(fcalls + 1).add(fcalls + 3);
      const [a, b] = await Promise.all([limiter.consume('k'), limiter.consume('k')]);
      expect(a.failure).toBeUndefined();
      expect(b.failure).toBeUndefined();
      expect([a.allowed, b.allowed]).toEqual([true, true]);
      expect(a.remaining).toBe(9);
      expect(b.remaining).toBe(8); // in issue order
      const sent = client.scriptCalls.slice(first).map((c) => `${c.name} ${String(c.args[0])}`);
      expect(sent.map((s) => s.split(' ')[0])).toEqual([
        'fcall', // A: flushed before it, missing
        'fcall', // B: missing
        'function', // LOAD
        'fcall', // A again, flushed before it: missing
        'fcall', // B again: missing
        'function', // LOAD
        'fcall', // A
        'fcall', // B
      ]);
      client.flushBefore.clear();
      expect(await storedCount(client, 'twice:')).toBe(3); // each call spent once
    } finally {
      client.disconnect();
      await server.stop();
    }
  });

  it('a Redis restart mid-burst: failures follow failMode, enforcement resumes, no outage spend stays charged', async () => {
    let server: { url: string; port: number; stop(): Promise<void> } = await startRedisServer();
    const port = server.port;
    const client = new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 50 });
    const store = new RedisStore({ client, prefix: 'restart:' });
    const policy = { name: 'p', algorithm: 'fixed-window', limit: 1_000, window: '1h' } as const;
    const limiter = new Limiter(store, policy, { timeoutMs: 200, onStoreFailure: () => undefined });
    try {
      // The library loaded and the Redis clock measured without the 200 ms bound (a loaded
      // machine can take longer than that to compile the library).
      await new Limiter(store, policy).peek('warm');
      expect((await limiter.consume('k')).allowed).toBe(true);
      const burst = (async () => {
        const out: Decision[] = [];
        for (let i = 0; i < 30; i++) {
          out.push(...(await Promise.all(Array.from({ length: 5 }, () => limiter.consume('k')))));
          await sleep(20);
        }
        return out;
      })();
      await sleep(100);
      await server.stop(); // gone mid-burst (no persistence: its state goes with it)
      const goneAt = Date.now(); // same machine: the Redis clock reads the same
      await sleep(300);
      server = await spawnRedisServer([], { pickPort: () => Promise.resolve(port) });
      const decisions = await burst;
      expect(decisions.some((d) => d.failure)).toBe(true);
      expect(decisions.filter((d) => d.failure).every((d) => !d.allowed)).toBe(true); // closed
      // Enforcement resumes on the same client, without restarting anything.
      let resumed = await limiter.consume('k');
      decisions.push(resumed);
      for (let i = 0; i < 50 && resumed.failure; i++)
        decisions.push((resumed = await limiter.consume('k')));
      expect(resumed.failure).toBeUndefined();
      expect(resumed.allowed).toBe(true);
      await sleep(300); // anything queued during the outage has been replayed by now
      // The new server holds exactly the spends it acknowledged: nothing from the outage stays
      // charged (the deadline keeps replayed spends from writing, and a late reply is refunded;
      // phantom-spends.spec.ts proves the deadline alone).
      const acknowledged = decisions.filter((d) => d.receipt.spent && d.receipt.at > goneAt);
      const check = new Redis(server.url);
      expect(await storedCount(check, 'restart:')).toBe(acknowledged.length);
      check.disconnect();
    } finally {
      client.disconnect();
      await server.stop();
    }
  });
});
