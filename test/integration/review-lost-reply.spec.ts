// Review of the outcome markers (lua/lib/outcome.lua, lib/stores/lost-replies.ts): attacks on "a
// lost reply leaves nothing charged once settled", "a settled spend is refunded exactly once" and
// "a copy is charged once".
import Redis, { type RedisOptions } from 'ioredis';
import { createClient } from 'redis';
import { createClient as createClientV4 } from 'redis-v4';
import { Limiter, RedisStore } from '../../lib';
import type { SpendRequest } from '../../lib/stores/store.interface';
import { storageKeysWithLedgers } from '../../lib/stores/storage-key.util';
import { proxiedServer } from '../support/lossy-proxy';
import { outcomeEntries, outcomeHashes } from '../support/outcome-entries';
import { until } from '../support/until';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('review: outcome markers under attack', () => {
  const h = proxiedServer();

  let prefixes = 0;
  function setup(options: RedisOptions = {}, limiterOptions: Record<string, unknown> = {}) {
    const client = new Redis(h.proxy.port, '127.0.0.1', {
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      ...options,
    });
    client.on('error', () => {});
    h.open.push(client);
    const prefix = `review-lost${++prefixes}:`;
    const store = new RedisStore({ client, prefix });
    const limiter = new Limiter(
      store,
      { name: 'p', algorithm: 'fixed-window', limit: 50, window: '1h' },
      { onStoreFailure: () => {}, timeoutMs: 300, ...limiterOptions },
    );
    /** Every stored key of the prefix but markers and ledgers, with its value. */
    const state = async (): Promise<Record<string, string>> => {
      const out: Record<string, string> = {};
      for (const key of (await h.check.keys(`${prefix}*`)).sort()) {
        if (key.includes('}!') || key.endsWith(':r')) continue;
        out[key] = (await h.check.get(key)) ?? '';
      }
      return out;
    };
    return { client, store, limiter, prefix, state };
  }

  // Attack: ioredis (default autoResendUnfulfilledCommands) writes the spend again once it has
  // reconnected, but later than the caller's deadline. The first copy ran and charged; the copy
  // sent again answers that it ran past its deadline (-1, wrote nothing). That answer must not
  // count as "the spend did not run": the first copy's charge must still be settled by its marker.
  it('a copy sent again after the deadline: the first copy is still settled (single call)', async () => {
    const { client, store, limiter, state } = setup({
      autoResendUnfulfilledCommands: true,
      maxRetriesPerRequest: 5,
      retryStrategy: () => 800, // reconnects (and sends the copy) after the 300 ms deadline
    });
    await limiter.consume('k');
    const before = await state();
    h.proxy.dropNextReply();
    const decision = await limiter.consume('k');
    expect(decision.failure).toBeDefined();
    await until(() => client.status === 'ready');
    await client.ping(); // the copy was sent before this, and answered
    await store.settleLostReplies();
    await until(() => store.lostReplies.pending === 0);
    // (the copy's late reply may be refunded by its receipt, issued after the ping: polled)
    const settled = JSON.stringify(before);
    await until(async () => JSON.stringify(await state()) === settled, 5_000).catch(() => {});
    expect(await state()).toEqual(before);
  });

  it('a coalesced batch sent again after the deadline: every first copy is still settled', async () => {
    const { client, store, limiter, state } = setup({
      autoResendUnfulfilledCommands: true,
      maxRetriesPerRequest: 5,
      retryStrategy: () => 800,
    });
    await Promise.all(['a', 'b', 'c'].map((key) => limiter.consume(key)));
    const before = await state();
    h.proxy.dropNextReply();
    const decisions = await Promise.all(['a', 'b', 'c'].map((key) => limiter.consume(key)));
    expect(decisions.every((d) => d.failure !== undefined)).toBe(true);
    await until(() => client.status === 'ready');
    await client.ping();
    await store.settleLostReplies();
    await until(() => store.lostReplies.pending === 0);
    // (the copy's late reply may be refunded by its receipt, issued after the ping: polled)
    const settled = JSON.stringify(before);
    await until(async () => JSON.stringify(await state()) === settled, 5_000).catch(() => {});
    expect(await state()).toEqual(before);
  });

  // Attack: a spend sent straight to the store without a deadline (the Store API allows it) whose
  // reply is merely slow (Redis held for longer than the 1 s after which an unanswered spend counts
  // as lost). The settlement is written behind it on the same connection, so it runs right after
  // the spend and refunds it, while the spend's own reply tells its caller "allowed": a unit
  // admitted and given back (budget created). Either outcome is fine if it is consistent: allowed
  // and charged, or failed and given back.
  it('a spend without a deadline that is only slow: allowed and charged, or failed and given back', async () => {
    const { client, store, prefix } = setup();
    const admin = new Redis(h.server.url);
    h.open.push(admin);
    const request = {
      policy: 'p',
      algorithm: 'fixed-window' as const,
      limits: [{ limit: 5, windowMs: 3_600_000, burst: 5 }],
      keys: ['k'],
      cost: 1,
    };
    await store.consume(request);
    const counter = storageKeysWithLedgers(prefix, ['k'], 'p', 1)[0]!;
    expect(await h.check.get(counter)).toBe('1');
    await admin.call('client', 'pause', '60000', 'write');
    let spent;
    try {
      spent = store.consume(request).then(
        (result) => (result.allowed ? 'allowed' : 'refused'),
        () => 'failed',
      );
      await sleep(1_500); // past the 1 s after which an unanswered spend counts as lost
    } finally {
      await admin.call('client', 'unpause');
    }
    const outcome = await spent;
    await client.ping(); // anything written behind the spend has run
    expect([outcome, await h.check.get(counter)]).toEqual(
      outcome === 'allowed' ? ['allowed', '2'] : ['failed', '1'],
    );
  });

  it('a spend without a deadline whose connection is lost: settled (a failure still counts)', async () => {
    const { store, prefix } = setup();
    const request = {
      policy: 'p',
      algorithm: 'fixed-window' as const,
      limits: [{ limit: 5, windowMs: 3_600_000, burst: 5 }],
      keys: ['k'],
      cost: 1,
    };
    await store.consume(request);
    const counter = storageKeysWithLedgers(prefix, ['k'], 'p', 1)[0]!;
    h.proxy.dropNextReply();
    // (ioredis, not sending it again, never answers it: it counts as lost 1 s after it was sent)
    void store.consume(request).catch(() => undefined);
    await until(() => store.lostReplies.refunded === 1);
    expect(await h.check.get(counter)).toBe('1');
  });
});

describe('review: outcome markers, what held', () => {
  const h = proxiedServer();

  const policy = { name: 'p', algorithm: 'fixed-window' as const, limit: 50, window: '1h' };
  let prefixes = 0;
  const counters = async (prefix: string) => {
    const out: Record<string, string> = {};
    for (const key of (await h.check.keys(`${prefix}*`)).sort()) {
      if (!key.includes('}!') && !key.endsWith(':r')) out[key] = (await h.check.get(key)) ?? '';
    }
    return out;
  };

  /** A limiter on `client` loses one reply: it is settled, nothing stays charged. */
  async function lostOnce(client: ConstructorParameters<typeof RedisStore>[0]['client']) {
    const prefix = `review-held${++prefixes}:`;
    const store = new RedisStore({ client, prefix });
    const limiter = new Limiter(store, policy, { onStoreFailure: () => {}, timeoutMs: 300 });
    await limiter.consume('k');
    const before = await counters(prefix);
    h.proxy.dropNextReply();
    const decision = await limiter.consume('k');
    expect(decision.failure).toBeDefined();
    await until(() => store.lostReplies.refunded === 1);
    expect(await counters(prefix)).toEqual(before);
  }
  const url = () => `redis://127.0.0.1:${h.proxy.port}`;

  it('node-redis v5: a lost reply is settled (its error counts as "may have run")', async () => {
    const client = createClient({ url: url(), socket: { reconnectStrategy: () => 50 } });
    client.on('error', () => undefined);
    await client.connect();
    try {
      await lostOnce(client);
    } finally {
      client.destroy();
    }
  });

  it('node-redis v4: a lost reply is settled (its error counts as "may have run")', async () => {
    const client = createClientV4({ url: url(), socket: { reconnectStrategy: () => 50 } });
    client.on('error', () => undefined);
    await client.connect();
    try {
      await lostOnce(client);
    } finally {
      await client.disconnect().catch(() => undefined);
    }
  });

  function direct() {
    const client = new Redis(h.server.url);
    const prefix = `review-held${++prefixes}:`;
    const store = new RedisStore({ client, prefix });
    const internals = store as unknown as {
      settleLost(s: unknown): Promise<number>;
      outcomeHash(key: string): string;
      lost: { done: Map<string, string[]> };
    };
    const hashOf = (request: SpendRequest) =>
      internals.outcomeHash(storageKeysWithLedgers(prefix, request.keys, request.policy, 1)[0]!);
    // A spend whose reply is then treated as lost: its field is not given to the next run to
    // delete (as for a reply that never came).
    const consume = async (request: SpendRequest) => {
      const result = await store.consume(request);
      internals.lost.done.delete(hashOf(request));
      return result;
    };
    const settle = (request: SpendRequest, spendId: string) =>
      internals.settleLost({
        request,
        spendId,
        deadline: '',
        deadlineAt: 0,
        forgetAt: Infinity,
        hash: hashOf(request),
        field: spendId,
        place: 1,
      });
    return { client, prefix, store, settle, consume };
  }
  const request = (keys: string[], policyName = 'p'): SpendRequest => ({
    policy: policyName,
    algorithm: 'fixed-window',
    limits: [{ limit: 5, windowMs: 3_600_000, burst: 5 }],
    keys,
    cost: 1,
  });

  it('a reset between the spend and its settlement: the settlement gives nothing back', async () => {
    const { client, prefix, store, settle, consume } = direct();
    const r = request(['k']);
    const lost = await consume(r);
    await store.reset({ policy: 'p', algorithm: 'fixed-window', limits: r.limits, keys: ['k'] });
    await consume(r);
    await consume(r);
    expect(Object.values(await counters(prefix))).toEqual(['2']);
    expect(await settle(r, lost.spendId!)).toBe(0);
    expect(Object.values(await counters(prefix))).toEqual(['2']);
    client.disconnect();
  });

  it('a marker that expired: nothing given back', async () => {
    const { client, prefix, settle, consume } = direct();
    const r = request(['k']);
    const lost = await consume(r);
    for (const key of await h.check.keys(`${prefix}*}!*`)) await h.check.del(key);
    expect(await settle(r, lost.spendId!)).toBe(-2);
    expect(Object.values(await counters(prefix))).toEqual(['1']);
    client.disconnect();
  });

  it('caller keys with } and !, two policies on one key: each spend an entry of its own, the hash kept ≤ 80 s', async () => {
    const { client, prefix, settle, consume } = direct();
    const keys = ['a}!b', 'a', 'a!', '{a}', '#a'];
    const spent = [];
    for (const key of keys) {
      for (const name of ['p', 'q'])
        spent.push([request([key], name), await consume(request([key], name))] as const);
    }
    expect(await outcomeEntries(h.check, prefix)).toEqual(
      spent.map(([, s]) => `${s.spendId}#1`).sort(),
    );
    const hashes = await outcomeHashes(h.check, prefix);
    expect(hashes).toHaveLength(1); // one process, one Redis: one hash
    const ttl = await h.check.pttl(hashes[0]!);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(80_000);
    // Settling one spend gives back only that one, once.
    const [r0, s0] = spent[0]!;
    expect(await settle(r0, s0.spendId!)).toBe(1);
    expect(await settle(r0, s0.spendId!)).toBe(-2);
    const left = Object.values(await counters(prefix)).filter((v) => v === '1');
    expect(left).toHaveLength(spent.length - 1);
    expect(await outcomeEntries(h.check, prefix)).toHaveLength(spent.length - 1);
    client.disconnect();
  });

  it("a coalesced batch: every allowed spend leaves a marker (a field of the run's hash) with a TTL, a refused one none", async () => {
    const client = new Redis(h.server.url);
    const prefix = `review-held${++prefixes}:`;
    const store = new RedisStore({ client, prefix });
    const limiter = new Limiter(store, { ...policy, limit: 2 });
    await limiter.consume('warm');
    const decisions = await Promise.all(
      ['x', 'x', 'x', 'y', 'z'].map((key) => limiter.consume(key)),
    );
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, true, true]);
    // The warm-up and the first x went alone (a field each, named by the spend id); the four after
    // it as one run (its field is its first spend's id and '*'): an entry per allowed spend, by
    // place; the refused x (place 2) none.
    const entries = await outcomeEntries(h.check, prefix);
    expect(entries).toHaveLength(5);
    expect(entries.filter((e) => e.includes('*#')).map((e) => e.split('#')[1])).toEqual([
      '1',
      '3',
      '4',
    ]);
    for (const key of await outcomeHashes(h.check, prefix)) {
      expect(await h.check.pttl(key)).toBeGreaterThan(0);
    }
    client.disconnect();
  });
});
