// A spend whose script ran but whose reply never reached the caller (its connection was lost:
// CLIENT KILL, a master SIGKILLed after the script ran) used to stay charged while the caller was
// refused for a store failure (found by the chaos run). Now every allowed spend leaves an outcome
// marker (lua/lib/outcome.lua), and the store settles a spend whose reply was lost once it can no
// longer run: refunded exactly once if its marker says it ran, nothing if it did not. A copy of a
// spend (a client that sends the command again after reconnecting) is charged once.
import Redis, { type RedisOptions } from 'ioredis';
import { Limiter, RedisStore } from '../../lib';
import type { SpendRequest } from '../../lib/stores/store.interface';
import type { Algorithm } from '../../lib/core/policy';
import { storageKeysWithLedgers } from '../../lib/stores/storage-key.util';
import { proxiedServer } from '../support/lossy-proxy';
import { outcomeEntries, outcomeHashes } from '../support/outcome-entries';
import { until } from '../support/until';

describe('a spend whose reply is lost with its connection', () => {
  const h = proxiedServer();

  let prefixes = 0;
  function setup(
    options: RedisOptions = {},
    policy: Record<string, unknown> = {},
    storeOptions: { outcomeMarkers?: boolean } = {},
  ) {
    const client = new Redis(h.proxy.port, '127.0.0.1', {
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      ...options,
    });
    client.on('error', () => {});
    h.open.push(client);
    const prefix = `lost${++prefixes}:`;
    const store = new RedisStore({ client, prefix, ...storeOptions });
    const limiter = new Limiter(
      store,
      { name: 'p', algorithm: 'fixed-window', limit: 5, window: '1h', ...policy },
      { onStoreFailure: () => {}, timeoutMs: 300 },
    );
    /** Every stored key of the prefix but markers and ledgers, with its value or members. */
    const state = async (): Promise<Record<string, string>> => {
      const out: Record<string, string> = {};
      for (const key of (await h.check.keys(`${prefix}*`)).sort()) {
        if (key.includes('}!') || key.endsWith(':r')) continue;
        const type = await h.check.type(key);
        out[key] =
          type === 'string'
            ? ((await h.check.get(key)) ?? '')
            : type === 'zset'
              ? (await h.check.zrange(key, 0, -1)).join(',')
              : type;
      }
      return out;
    };
    const markers = () => outcomeEntries(h.check, prefix);
    return { client, store, limiter, prefix, state, markers };
  }

  it.each<[Algorithm, Record<string, unknown>]>([
    ['fixed-window', {}],
    ['sliding-window', {}],
    ['token-bucket', {}],
    ['gcra', {}],
    ['sliding-log', {}],
    ['concurrency', { window: '1m' }],
  ])('%s: a lost reply leaves no charge after recovery, settled once', async (algorithm, more) => {
    const { store, limiter, state, markers } = setup({}, { algorithm, ...more });
    await limiter.consume('k'); // library loaded, clock measured, one unit charged
    // Buckets store instants: compare what a caller sees; the others, the stored state itself.
    const bucket = algorithm === 'token-bucket' || algorithm === 'gcra';
    const seen = async () => (bucket ? (await limiter.peek('k')).remaining : await state());
    const before = await seen();
    h.proxy.dropNextReply();
    const decision = await limiter.consume('k');
    expect(decision.allowed).toBe(false);
    expect(decision.failure).toBeDefined();
    expect(await seen()).not.toEqual(before); // the script ran: charged
    await until(() => store.lostReplies.refunded === 1);
    expect(await seen()).toEqual(before);
    // The first spend's entry (its reply came: its field waits to be deleted with a later run);
    // the second's went with its settlement.
    expect(await markers()).toHaveLength(1);
    expect(store.lostReplies).toEqual({ pending: 0, refunded: 1, notRun: 0, forgotten: 0 });
  });

  it('a coalesced batch whose reply is lost: every spend in it is settled', async () => {
    const { store, limiter, state } = setup({}, { limit: 50 });
    await limiter.consume('a');
    const before = await state();
    h.proxy.dropNextReply();
    const decisions = await Promise.all(
      ['a', 'b', 'c', 'a', 'b', 'd'].map((key) => limiter.consume(key)),
    );
    expect(decisions.every((d) => d.failure !== undefined)).toBe(true);
    // The first went alone and its reply was lost with the connection; the batch after it was
    // written to the same connection (or refused before it was sent): nothing may stay charged.
    // Every run is done with: answered, failed without having run, or lost and settled (a run
    // its client never answers counts as lost a second past its own deadline: not all at once).
    const runs = (store as unknown as { lost: { runs: Map<string, unknown> } }).lost.runs;
    await until(
      () => runs.size === 0 && store.lostReplies.pending === 0 && store.lostReplies.refunded >= 1,
    );
    expect(await state()).toEqual(before);
  });

  it('a spend that never reached Redis: nothing is given back (no budget is created)', async () => {
    const { store, limiter, state } = setup();
    await limiter.consume('k');
    await limiter.consume('k');
    const before = await state();
    h.proxy.dropNextRequest();
    const decision = await limiter.consume('k');
    expect(decision.failure).toBeDefined();
    await until(() => store.lostReplies.notRun === 1);
    expect(await state()).toEqual(before);
    expect(store.lostReplies.refunded).toBe(0);
  });

  it('a spend sent again after a lost reply is charged once, and answered allowed', async () => {
    const { limiter, state } = setup({
      autoResendUnfulfilledCommands: true,
      maxRetriesPerRequest: 5,
    });
    const prefixState = async () => Object.values(await state());
    await limiter.consume('k');
    h.proxy.dropNextReply();
    const decision = await limiter.consume('k');
    // ioredis wrote the command again on the new connection: the copy found the marker.
    expect(decision.failure).toBeUndefined();
    expect(decision.allowed).toBe(true);
    expect(await prefixState()).toEqual(['2']);
    // Its receipt refunds the one charge, once.
    expect(await limiter.refund(decision.receipt)).toBe(true);
    expect(await prefixState()).toEqual(['1']);
  });

  it('a refused spend leaves no marker (its lost reply would give nothing back)', async () => {
    const { client, store, prefix } = setup({}, {});
    const request = {
      policy: 'p',
      algorithm: 'fixed-window' as const,
      limits: [{ limit: 1, windowMs: 3_600_000, burst: 1 }],
      keys: ['k'],
      cost: 1,
    };
    const first = await store.consume(request);
    const refused = await store.consume(request);
    expect(refused.allowed).toBe(false);
    // The first spend's entry alone (its field waits to be deleted with a later run).
    expect(await outcomeEntries(h.check, prefix)).toEqual([`${first.spendId}#1`]);
    client.disconnect();
  });

  it('the outcome hash holds the runs in flight and little more, and always has a TTL', async () => {
    const { limiter, prefix } = setup({}, { limit: 1_000 });
    for (let i = 0; i < 100; i++) await limiter.consume(`k${i % 7}`);
    await Promise.all(Array.from({ length: 64 }, (_, i) => limiter.consume(`b${i}`)));
    for (let i = 0; i < 40; i++) await limiter.consume('k');
    const [hash, ...others] = await outcomeHashes(h.check, prefix);
    expect(others).toEqual([]);
    // `~`, at most fifteen fields waiting to be deleted, and the latest run's.
    expect(await h.check.hlen(hash!)).toBeLessThanOrEqual(17);
    const ttl = await h.check.pttl(hash!);
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(80_000);
    // Gone (evicted, deleted by hand): the next run makes it again, with its TTL.
    await h.check.del(hash!);
    await limiter.consume('k');
    expect(await h.check.pttl(hash!)).toBeGreaterThan(60_000);
  });

  it.each<[Algorithm, Record<string, unknown>]>([
    ['fixed-window', {}],
    ['sliding-log', {}],
    ['concurrency', { window: '1m' }],
  ])(
    '%s, outcomeMarkers: false: decisions alone and coalesced write no marker; a lost reply stays charged',
    async (algorithm, more) => {
      const { store, limiter, prefix, state } = setup(
        {},
        { algorithm, limit: 50, ...more },
        { outcomeMarkers: false },
      );
      await limiter.consume('k');
      const together = await Promise.all(['a', 'b', 'a', 'c'].map((key) => limiter.consume(key)));
      expect(together.map((d) => d.allowed)).toEqual([true, true, true, true]);
      // An attempt (a spend settled by its receipt) still refunds exactly.
      const attempt = await limiter.begin('r');
      attempt.refund();
      await attempt.settle();
      expect((await limiter.peek('r')).remaining).toBe((await limiter.peek('fresh')).remaining);
      expect(await outcomeHashes(h.check, prefix)).toEqual([]);
      const before = await state();
      h.proxy.dropNextReply();
      const decision = await limiter.consume('k');
      expect(decision.failure).toBeDefined();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await store.settleLostReplies();
      expect(store.lostReplies).toEqual({ pending: 0, refunded: 0, notRun: 0, forgotten: 0 });
      expect(await state()).not.toEqual(before); // charged, as before markers
    },
  );

  it('outcomeMarkers must be true or false', () => {
    const client = new Redis(h.proxy.port, '127.0.0.1', { lazyConnect: true });
    expect(() => new RedisStore({ client, outcomeMarkers: 'no' as unknown as boolean })).toThrow(
      'RedisStore options.outcomeMarkers must be true or false',
    );
    client.disconnect();
  });

  describe('settling by marker (the refund in outcome mode)', () => {
    // A lost lone spend as the store remembers it: its run's field is its spend id, place 1.
    const lostSpend = (
      store: RedisStore,
      request: SpendRequest,
      spendId: string,
      deadline: string,
    ) => ({
      request,
      spendId,
      deadline,
      deadlineAt: 0,
      forgetAt: Infinity,
      hash: (store as unknown as { outcomeHash(key: string): string }).outcomeHash(
        storageKeysWithLedgers(store.prefix, request.keys, request.policy, 1)[0]!,
      ),
      field: spendId,
      place: 1,
    });

    it('before the deadline: not yet, the marker stays; after: once; again: nothing', async () => {
      const { store, prefix } = setup();
      const request = {
        policy: 'p',
        algorithm: 'fixed-window' as const,
        limits: [{ limit: 5, windowMs: 3_600_000, burst: 5 }],
        keys: ['k'],
        cost: 2,
      };
      const spent = await store.consume(request);
      const spendId = spent.spendId!;
      const counter = storageKeysWithLedgers(prefix, ['k'], 'p', 1)[0]!;
      expect(await h.check.get(counter)).toBe('2');
      const settle = (deadline: string) =>
        (store as unknown as { settleLost(s: unknown): Promise<number> }).settleLost(
          lostSpend(store, request, spendId, deadline),
        );
      const [redisNow] = await h.check.time();
      expect(await settle(String(Number(redisNow) * 1000 + 60_000))).toBe(-1);
      expect(await h.check.get(counter)).toBe('2');
      expect(await settle(String(Number(redisNow) * 1000 - 1))).toBe(1);
      expect(await h.check.get(counter)).toBeNull();
      expect(await settle('')).toBe(-2);
      // Its receipt finds it refunded already.
      await store.refund({ ...request, at: spent.at, spendId: spent.spendId });
      expect(await h.check.get(counter)).toBeNull();
    });

    it('a spend refunded by its receipt first is not given back again by its marker', async () => {
      const { store, prefix } = setup();
      const request = {
        policy: 'p',
        algorithm: 'fixed-window' as const,
        limits: [{ limit: 5, windowMs: 3_600_000, burst: 5 }],
        keys: ['k'],
        cost: 1,
      };
      await store.consume(request);
      const spent = await store.consume(request);
      await store.refund({ ...request, at: spent.at, spendId: spent.spendId });
      const counter = storageKeysWithLedgers(prefix, ['k'], 'p', 1)[0]!;
      expect(await h.check.get(counter)).toBe('1');
      const settled = await (
        store as unknown as { settleLost(s: unknown): Promise<number> }
      ).settleLost(lostSpend(store, request, spent.spendId!, ''));
      expect(settled).toBe(0);
      expect(await h.check.get(counter)).toBe('1');
    });
  });
});
