import {
  type DecisionEvent,
  DecisionEvents,
  Limiter,
  MemoryStore,
  type PolicyOptions,
  RedisStore,
} from '../../lib';
import { keyHash } from '../../lib/core/events';
import { backends, TestClock } from '../support/backends';
import { startRedisServer } from '../support/redis';
import Redis from 'ioredis';

const stores = backends('events');

describe.each(stores)('$name store: decision events', (backend) => {
  const policy: PolicyOptions = {
    name: 'login',
    algorithm: 'sliding-window',
    limit: 3,
    window: '1m',
  };

  it('one event per consume, peek and refund, with the right outcome and no raw key', async () => {
    const events = new DecisionEvents();
    const seen: DecisionEvent[] = [];
    events.on((e) => seen.push(e));
    const limiter = new Limiter(backend.store(new TestClock()), policy, { events });
    const keys = ['ip:203.0.113.9', 'email:alice@example.com'];
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.consume(keys));
    await limiter.peek(keys);
    await limiter.refund(decisions[0]!);
    await limiter.refund(decisions[0]!); // once: no second event
    expect(seen.map((e) => `${e.operation}:${e.outcome}`)).toEqual([
      'consume:allowed',
      'consume:allowed',
      'consume:allowed',
      'consume:refused',
      'consume:refused',
      'peek:refused',
      'refund:refunded',
    ]);
    expect(seen[3]).toMatchObject({ policy: 'login', limit: 3, windowMs: 60_000, remaining: 0 });
    expect(seen[3]!.retryAfterMs).toBeGreaterThan(0);
    for (const e of seen) {
      expect(e.latencyMs).toBeGreaterThanOrEqual(0);
      expect(e.keyHashes).toEqual(keys.map(keyHash));
      const text = JSON.stringify(e);
      for (const key of keys) expect(text).not.toContain(key);
      expect(text).not.toContain('alice');
    }
  });

  it('a stacked decision reports each part, marked as stacked', async () => {
    const events = new DecisionEvents();
    const seen: DecisionEvent[] = [];
    events.on((e) => seen.push(e));
    const store = backend.store(new TestClock());
    const ip = new Limiter(store, { ...policy, name: 'ip', limit: 5 }, { events });
    const endpoint = new Limiter(store, { ...policy, name: 'export', limit: 1 }, { events });
    const parts = [
      { limiter: ip, keys: 'ip:1' },
      { limiter: endpoint, keys: 'ip:1' },
    ];
    await Limiter.consumeAll(parts);
    await Limiter.consumeAll(parts);
    expect(seen.map((e) => `${e.policy}:${e.outcome}:${String(e.stacked)}`)).toEqual([
      'ip:allowed:true',
      'export:allowed:true',
      'ip:refused-elsewhere:true',
      'export:refused:true',
    ]);
  });

  it('soft limit: the warning appears from the threshold on, not before', async () => {
    const events = new DecisionEvents();
    const warned: boolean[] = [];
    events.on((e) => warned.push(e.warning === true));
    const limiter = new Limiter(
      backend.store(new TestClock()),
      { name: 'api', algorithm: 'fixed-window', limit: 10, window: '1m', warnAt: 0.8 },
      { events },
    );
    const decisions = [];
    for (let i = 0; i < 11; i++) decisions.push(await limiter.consume('key:1'));
    // Calls 1-7 leave at most 70 % used; the 8th reaches 80 %; the 11th is refused (no warning).
    expect(decisions.map((d) => d.warning === true)).toEqual([
      ...Array<boolean>(7).fill(false),
      true,
      true,
      true,
      false,
    ]);
    expect(decisions[10]!.allowed).toBe(false);
    expect(warned).toEqual(decisions.map((d) => d.warning === true));
  });

  it('soft limit on a bucket counts against its burst capacity', async () => {
    const limiter = new Limiter(backend.store(new TestClock()), {
      name: 'bucket',
      algorithm: 'token-bucket',
      limit: 1,
      window: '1h',
      burst: 4,
      warnAt: 0.5,
    });
    const warnings = [];
    for (let i = 0; i < 4; i++) warnings.push((await limiter.consume('k')).warning === true);
    expect(warnings).toEqual([false, true, true, true]);
  });
});

/** An open and a closed limiter, reporting to `seen`, on a private Redis the test can stop. */
async function openAndClosed() {
  const server = await startRedisServer();
  const client = new Redis(server.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
  await new Promise((resolve) => client.once('ready', resolve));
  const events = new DecisionEvents();
  const seen: DecisionEvent[] = [];
  events.on((e) => seen.push(e));
  const store = new RedisStore({ client, prefix: 'events-fail:' });
  const quiet = { events, onStoreFailure: () => undefined, timeoutMs: 300 };
  const open = new Limiter(store, { ...policyOf('open'), failMode: 'open' }, quiet);
  const closed = new Limiter(store, { ...policyOf('closed'), failMode: 'closed' }, quiet);
  return { server, client, seen, open, closed };
}

describe('decision events when the store fails', () => {
  it('failed-open and failed-closed outcomes, with the reason', async () => {
    const { server, client, seen, open, closed } = await openAndClosed();
    try {
      expect((await open.consume('k')).allowed).toBe(true);
      await server.stop();
      expect((await open.consume('k')).failure).toBeDefined();
      expect((await closed.consume('k')).failure).toBeDefined();
      expect(seen.map((e) => `${e.policy}:${e.outcome}`)).toEqual([
        'open:allowed',
        'open:failed-open',
        'closed:failed-closed',
      ]);
      expect(seen[1]!.failure).toMatch(/^(error|timeout)$/);
    } finally {
      client.disconnect();
      await server.stop().catch(() => undefined);
    }
  });

  it('a stack with an open and a closed part, the store down: refused as a whole, blamed on the closed part', async () => {
    const { server, client, seen, open, closed } = await openAndClosed();
    try {
      await server.stop();
      const stacked = await Limiter.consumeAll([
        { limiter: open, keys: 'k' },
        { limiter: closed, keys: 'k' },
      ]);
      expect(stacked.allowed).toBe(false);
      expect(stacked.decisions.map((d) => d.allowed)).toEqual([false, false]);
      expect(stacked.refusedBy?.policy).toBe('closed');
      expect(stacked.retryAfterMs).toBeGreaterThan(0);
      expect(seen.map((e) => `${e.policy}:${e.outcome}`)).toEqual([
        'open:failed-open',
        'closed:failed-closed',
      ]);
    } finally {
      client.disconnect();
      await server.stop().catch(() => undefined);
    }
  });

  it('a listener that throws never changes a decision', async () => {
    const events = new DecisionEvents();
    events.on(() => {
      throw new Error('listener bug');
    });
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const limiter = new Limiter(new MemoryStore(), policyOf('p'), { events });
      expect((await limiter.consume('k')).allowed).toBe(true);
      expect((await limiter.consume('k')).remaining).toBe(3);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('listener bug'), 'RedlimitWarning');
    } finally {
      warn.mockRestore();
    }
  });
});

function policyOf(name: string): PolicyOptions {
  return { name, algorithm: 'fixed-window', limit: 5, window: '1m' };
}
