import Redis from 'ioredis';
import {
  type Algorithm,
  Limiter,
  type PolicyOptions,
  PolicyOverrides,
  RedisStore,
  type Store,
} from '../../lib';
import type { MemoryOverrideBook } from '../../lib/stores/override-book.memory';
import { backends, type Backend, TestClock } from '../support/backends';
import { createTestClient } from '../support/redis';

const stores = backends('overrides');
// The algorithms whose limit an override may change: a token bucket's or gcra's stored state is
// relative to its rate and capacity, so their limit and burst are refused at runtime (specs below).
const RATE_ALGORITHMS: Algorithm[] = ['fixed-window', 'sliding-window', 'sliding-log'];

/** Units left now, read without spending (a peek's `remaining` is as if one unit were spent). */
const left = async (limiter: Limiter, keys: string | string[]) => {
  const peeked = await limiter.peek(keys);
  return peeked.allowed ? peeked.remaining + 1 : peeked.remaining;
};

/** How many of `n` single-unit consumes on `keys`, one after the other, are allowed. */
const admitted = async (limiter: Limiter, keys: string | string[], n: number) => {
  let count = 0;
  for (let i = 0; i < n; i++) if ((await limiter.consume(keys)).allowed) count++;
  return count;
};

const started: PolicyOverrides[] = [];
const closing: Redis[] = [];
afterEach(() => {
  for (const o of started.splice(0)) o.stop();
  for (const c of closing.splice(0)) c.disconnect();
});

const API: PolicyOptions = { name: 'api', algorithm: 'fixed-window', limit: 5, window: '1m' };

describe.each(stores)('$name store: live limits (PolicyOverrides)', (backend: Backend) => {
  const setup = async (policy: PolicyOptions = API) => {
    const clock = new TestClock();
    clock.advance(1_000); // inside a window, not on its boundary
    const store = backend.store(clock);
    const warnings: string[] = [];
    const book = store.overrides!();
    const overrides = new PolicyOverrides(book, {
      pollMs: 50,
      onWarning: (message) => warnings.push(message),
    });
    started.push(overrides);
    await overrides.start();
    const limiter = new Limiter(store, policy, { overrides });
    return { clock, store, book, overrides, limiter, warnings };
  };

  /** Writes a raw stored value under a field, as another (newer, broken) writer would. */
  const storeRaw = async (store: Store, field: string, value: string) => {
    if (store instanceof RedisStore) {
      const client = backend.client!;
      await client.hset(`${store.prefix}{overrides}:set`, field, value);
      await client.incr(`${store.prefix}{overrides}:version`);
    } else {
      (store.overrides!() as MemoryOverrideBook).storeRaw(field, value);
    }
  };

  describe('set / list / clear / history', () => {
    it('round trip: each write moves the version by one; an unset of nothing changes nothing; history newest first', async () => {
      const { overrides, limiter, book, clock } = await setup();
      expect(overrides.version).toBe(0);
      expect(await book.version()).toBe(0);
      expect(await overrides.list()).toEqual([]);

      const first = await overrides.set(
        limiter.policy,
        { limit: 8 },
        { actor: 'alice', reason: 'launch' },
      );
      expect(first).toMatchObject({
        policy: 'api',
        scope: '',
        change: { limit: 8 },
        version: 1,
        at: clock.now,
        actor: 'alice',
        reason: 'launch',
      });
      expect(overrides.version).toBe(1);

      clock.advance(10);
      const replaced = await overrides.set(limiter.policy, { limit: 9 }, { actor: 'bob' });
      expect(replaced.version).toBe(2);
      const scoped = await overrides.set(
        limiter.policy,
        { limit: 2 },
        { scope: 'tenant:a:', actor: 'carol', reason: 'abuse' },
      );
      expect(scoped.version).toBe(3);

      const listed = await overrides.list();
      expect(listed.map((o) => [o.scope, o.change, o.version, o.actor])).toEqual([
        ['', { limit: 9 }, 2, 'bob'],
        ['tenant:a:', { limit: 2 }, 3, 'carol'],
      ]);
      expect(listed[0]!.reason).toBeUndefined();

      // Nothing to remove: no version move, no history entry.
      expect(await overrides.clear('api', { scope: 'tenant:zzz:' })).toBe(false);
      expect(await overrides.clear('other-policy')).toBe(false);
      expect(await book.version()).toBe(3);

      expect(await overrides.clear('api', { actor: 'dave', reason: 'done' })).toBe(true);
      expect(await book.version()).toBe(4);
      expect(overrides.version).toBe(4);
      expect((await overrides.list()).map((o) => o.scope)).toEqual(['tenant:a:']);

      const history = await overrides.history(10);
      expect(history.map((h) => [h.action, h.scope, h.version, h.actor, h.reason])).toEqual([
        ['unset', '', 4, 'dave', 'done'],
        ['set', 'tenant:a:', 3, 'carol', 'abuse'],
        ['set', '', 2, 'bob', undefined],
        ['set', '', 1, 'alice', 'launch'],
      ]);
      expect(history[1]!.change).toEqual({ limit: 2 });
      expect(history[3]!.at).toBe(TestClock.BASE + 1_000);
      expect(await overrides.history(2)).toHaveLength(2);
      await expect(overrides.history(0)).rejects.toThrow(RangeError);
    });

    it('the default actor is code; the same write twice still moves the version (one per write)', async () => {
      const { overrides, limiter, book } = await setup();
      await overrides.set(limiter.policy, { limit: 7 });
      await overrides.set(limiter.policy, { limit: 7 });
      expect(await book.version()).toBe(2);
      const [latest] = await overrides.history(1);
      expect(latest).toMatchObject({ action: 'set', actor: 'code', version: 2 });
    });
  });

  describe('an override in force changes decisions', () => {
    it('raise and lower, for every key', async () => {
      const { overrides, limiter } = await setup();
      await overrides.set(limiter.policy, { limit: 8 });
      expect(await admitted(limiter, 'k1', 12)).toBe(8);
      const d = await limiter.consume('k2');
      expect(d.limit).toBe(8);
      await overrides.set(limiter.policy, { limit: 3 });
      expect(await admitted(limiter, 'k3', 6)).toBe(3);
      // k2 spent 1 of the 3 now in force
      expect(await left(limiter, 'k2')).toBe(2);
      await overrides.clear('api');
      expect(await admitted(limiter, 'k4', 8)).toBe(5);
    });

    it('scoped: only keys with the prefix; the most specific scope wins; others keep the global one', async () => {
      const { overrides, limiter } = await setup();
      await overrides.set(limiter.policy, { limit: 6 });
      await overrides.set(limiter.policy, { limit: 4 }, { scope: 'tenant:' });
      await overrides.set(limiter.policy, { limit: 2 }, { scope: 'tenant:a:' });
      expect(await admitted(limiter, 'tenant:a:u1', 10)).toBe(2);
      expect(await admitted(limiter, 'tenant:b:u1', 10)).toBe(4);
      expect(await admitted(limiter, 'ip:1', 10)).toBe(6);
      // a prefix is a prefix: 'tenant:a' without the colon is not under 'tenant:a:'
      expect(await admitted(limiter, 'tenant:a', 10)).toBe(4);
      // the scope itself as a whole key is under it
      expect(await admitted(limiter, 'tenant:a:', 10)).toBe(2);
      // a key that merely contains the scope later on is not
      expect(await admitted(limiter, 'x:tenant:a:u', 10)).toBe(6);
    });

    it('multi-key call: the longest scope any key starts with governs the whole call', async () => {
      const { overrides, limiter } = await setup();
      await overrides.set(limiter.policy, { limit: 2 }, { scope: 'tenant:a:' });
      await overrides.set(limiter.policy, { limit: 3 }, { scope: 'tenant:' });
      // key order does not matter
      expect(await admitted(limiter, ['ip:9', 'tenant:a:u'], 10)).toBe(2);
      expect(await admitted(limiter, ['tenant:a:v', 'ip:8'], 10)).toBe(2);
      expect(await admitted(limiter, ['tenant:b:v', 'tenant:a:w'], 10)).toBe(2);
      expect(await admitted(limiter, ['tenant:b:v2', 'ip:7'], 10)).toBe(3);
      expect(await admitted(limiter, ['ip:5', 'ip:6'], 10)).toBe(5);
      // all-or-nothing still: ip:9 spent 2 under the scoped call, so alone it has 3 of 5 left
      expect(await left(limiter, 'ip:9')).toBe(3);
    });

    it('layering: a scoped override applies over the global one, and alone once the global goes', async () => {
      const { overrides, limiter } = await setup({
        name: 'layered',
        algorithm: 'fixed-window',
        limit: 10,
        window: '1m',
        block: { duration: '1m' },
      });
      await overrides.set(limiter.policy, { limit: 3, block: null });
      await overrides.set(limiter.policy, { limit: 20 }, { scope: 'vip:' });
      expect(await admitted(limiter, 'vip:1', 30)).toBe(20);
      expect(await admitted(limiter, 'plain', 10)).toBe(3);
      // the global block: null applied under the scope too: no lockout after the refusals
      expect((await limiter.consume('vip:1')).blockedUntil).toBeUndefined();
      await overrides.clear('layered');
      expect(await admitted(limiter, 'vip:2', 30)).toBe(20);
      expect(await admitted(limiter, 'plain2', 30)).toBe(10);
    });

    it.each(['token-bucket', 'gcra'] as const)(
      '%s: limit and burst cannot change at runtime (refused, nothing stored); shadow can',
      async (algorithm) => {
        const { overrides, limiter } = await setup({
          name: `b-${algorithm}`,
          algorithm,
          limit: 10,
          window: '1m',
        });
        const before = await overrides.book.version();
        for (const change of [{ limit: 20 }, { burst: 5 }, { limits: [{ limit: 20 }] }]) {
          await expect(overrides.set(limiter.policy, change)).rejects.toThrow(
            /cannot change at runtime yet/,
          );
        }
        expect(await overrides.book.version()).toBe(before);
        await overrides.set(limiter.policy, { shadow: true });
        expect(await admitted(limiter, 'k', 15)).toBe(15);
      },
    );

    it('layering: global shadow with a scoped lower limit — the scoped key is shadowed too', async () => {
      const { overrides, limiter } = await setup();
      await overrides.set(limiter.policy, { shadow: true });
      await overrides.set(limiter.policy, { limit: 2 }, { scope: 't:' });
      const ds = [];
      for (let i = 0; i < 4; i++) ds.push(await limiter.consume('t:1'));
      expect(ds.every((d) => d.allowed)).toBe(true);
      expect(ds.map((d) => d.shadowRefused === true)).toEqual([false, false, true, true]);
    });

    it('overrides of another policy name do not apply', async () => {
      const { overrides, limiter, store } = await setup();
      const other = new Limiter(
        store,
        { ...API, name: 'other', limit: 5 },
        { overrides: overrides },
      );
      await overrides.set(limiter.policy, { limit: 1 });
      expect(await admitted(other, 'k', 10)).toBe(5);
      expect(await admitted(limiter, 'k', 10)).toBe(1);
    });

    it('a multi-limit policy takes limits in order', async () => {
      const { overrides, limiter } = await setup({
        name: 'two',
        algorithm: 'fixed-window',
        limits: [
          { limit: 3, window: '1m' },
          { limit: 10, window: '1h' },
        ],
      });
      await overrides.set(limiter.policy, {
        limits: [{ limit: 6 }, { limit: 8, window: '1h' }],
      });
      expect(await admitted(limiter, 'k', 10)).toBe(6);
      await overrides.set(limiter.policy, { limits: [{ limit: 9 }, { limit: 7 }] });
      expect(await admitted(limiter, 'k', 10)).toBe(1);
    });
  });

  describe('from / until', () => {
    it('an override from a later instant is not in force before it, is after refresh()', async () => {
      const { overrides, limiter, clock } = await setup();
      await overrides.set(limiter.policy, { limit: 2 }, { from: clock.now + 10_000 });
      expect(overrides.inForceNow()).toHaveLength(0);
      expect(await admitted(limiter, 'a', 10)).toBe(5);
      clock.advance(10_000);
      expect(await overrides.refresh()).toBe(true);
      expect(overrides.inForceNow()).toHaveLength(1);
      expect(await admitted(limiter, 'b', 10)).toBe(2);
      expect(await overrides.refresh()).toBe(false);
    });

    it('an override until an instant ends there (and is dropped from the store on the next write)', async () => {
      const { overrides, limiter, clock } = await setup();
      const until = clock.now + 5_000;
      await overrides.set(limiter.policy, { limit: 2 }, { until, scope: 'x:' });
      await overrides.set(limiter.policy, { limit: 4 }, { until: new Date(until + 1_000) });
      expect(await admitted(limiter, 'x:1', 10)).toBe(2);
      expect(await admitted(limiter, 'y:1', 10)).toBe(4);
      clock.advance(5_000); // exactly `until`: no longer in force
      expect(await overrides.refresh()).toBe(true);
      expect(await admitted(limiter, 'x:2', 10)).toBe(4);
      clock.advance(1_000);
      await overrides.refresh();
      expect(await admitted(limiter, 'x:3', 10)).toBe(5);
      expect(overrides.inForceNow()).toHaveLength(0);
      await overrides.set(limiter.policy, { limit: 9 }, { scope: 'z:' });
      expect((await overrides.list()).map((o) => o.scope)).toEqual(['z:']);
    });

    it('list() after an until passed: both stores answer alike (memory drops it on read, Redis only on the next write)', async () => {
      const { overrides, limiter, clock } = await setup();
      await overrides.set(limiter.policy, { limit: 2 }, { until: clock.now + 1_000 });
      clock.advance(1_000);
      // MemoryOverrideBook.list() drops passed overrides; RedisOverrideBook.list() returns them
      // until some write runs lua/overrides/write.lua: the stores disagree on what is stored.
      expect(await overrides.list()).toEqual([]);
    });

    it('from and until together: a window of force', async () => {
      const { overrides, limiter, clock } = await setup();
      await overrides.set(
        limiter.policy,
        { limit: 1 },
        { from: clock.now + 1_000, until: clock.now + 2_000 },
      );
      expect(await admitted(limiter, 'a', 10)).toBe(5);
      clock.advance(1_000);
      await overrides.refresh();
      expect(await admitted(limiter, 'b', 10)).toBe(1);
      clock.advance(1_000);
      await overrides.refresh();
      expect(await admitted(limiter, 'c', 10)).toBe(5);
    });
  });

  describe('validation: refused with a clear message before the store is touched', () => {
    const refused = async (
      run: (o: PolicyOverrides, l: Limiter, clock: TestClock) => Promise<unknown>,
      error: typeof TypeError | typeof RangeError,
      message: RegExp,
      policy: PolicyOptions = API,
    ) => {
      const { overrides, limiter, book, clock } = await setup(policy);
      const set = jest.spyOn(book, 'set');
      const unset = jest.spyOn(book, 'unset');
      const before = await book.version();
      let thrown: unknown;
      try {
        await run(overrides, limiter, clock);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(error);
      expect((thrown as Error).message).toMatch(message);
      expect(set).not.toHaveBeenCalled();
      expect(unset).not.toHaveBeenCalled();
      expect(await book.version()).toBe(before);
      expect(await overrides.list()).toEqual([]);
    };

    it('an unknown field', () =>
      refused(
        (o, l) => o.set(l.policy, { limit: 5, limt: 3 } as never),
        TypeError,
        /'limt' is not something an override changes/,
      ));
    it('a window change', () =>
      refused(
        (o, l) => o.set(l.policy, { window: '2m' } as never),
        RangeError,
        /window cannot change at runtime/,
      ));
    it('an algorithm change', () =>
      refused(
        (o, l) => o.set(l.policy, { algorithm: 'gcra' } as never),
        RangeError,
        /algorithm cannot change/,
      ));
    it("a limit's window change inside limits", () =>
      refused(
        (o, l) => o.set(l.policy, { limits: [{ limit: 5, window: '2m' }] }),
        RangeError,
        /limits\[0\]\.window cannot change/,
      ));
    it('the number of limits', () =>
      refused(
        (o, l) => o.set(l.policy, { limits: [{ limit: 5 }, { limit: 9 }] }),
        RangeError,
        /limits must list the policy's 1 limit/,
      ));
    it('limit with a multi-limit policy', () =>
      refused((o, l) => o.set(l.policy, { limit: 5 }), TypeError, /has 2 limits/, {
        name: 'two',
        algorithm: 'fixed-window',
        limits: [
          { limit: 3, window: '1m' },
          { limit: 9, window: '1h' },
        ],
      }));
    it.each([0, -1, 1.5, Number.NaN, Infinity, '5'])('limit %p', (limit) =>
      refused((o, l) => o.set(l.policy, { limit } as never), RangeError, /limit/),
    );
    it('a bad scope: not a string, too long, a lone surrogate', async () => {
      await refused(
        (o, l) => o.set(l.policy, { limit: 5 }, { scope: 42 as never }),
        TypeError,
        /scope must be a string/,
      );
      await refused(
        (o, l) => o.set(l.policy, { limit: 5 }, { scope: 'x'.repeat(513) }),
        RangeError,
        /at most 512/,
      );
      await refused(
        (o, l) => o.set(l.policy, { limit: 5 }, { scope: 'a\uD800' }),
        RangeError,
        /lone surrogate/,
      );
    });
    it('until in the past (or now)', () =>
      refused(
        (o, l, clock) => o.set(l.policy, { limit: 5 }, { until: clock.now }),
        RangeError,
        /has already passed/,
      ));
    it('from ≥ until', () =>
      refused(
        (o, l, clock) =>
          o.set(l.policy, { limit: 5 }, { from: clock.now + 500, until: clock.now + 500 }),
        RangeError,
        /must be after from/,
      ));
    it.each([Number.NaN, -1, Infinity, 1.5, '123'])('until %p', (until) =>
      refused(
        (o, l) => o.set(l.policy, { limit: 5 }, { until: until as never }),
        RangeError,
        /until must be a Date/,
      ),
    );
    it('an unknown option', () =>
      refused(
        (o, l) => o.set(l.policy, { limit: 5 }, { scpoe: 'a:' } as never),
        TypeError,
        /scpoe/,
      ));
    it('shadow not a boolean; failMode unknown', async () => {
      await refused(
        (o, l) => o.set(l.policy, { shadow: 'yes' } as never),
        TypeError,
        /shadow must be true or false/,
      );
      await refused(
        (o, l) => o.set(l.policy, { failMode: 'sometimes' } as never),
        RangeError,
        /failMode must be/,
      );
    });
    it('an empty change; actor too long', async () => {
      await refused((o, l) => o.set(l.policy, {}), TypeError, /changes nothing/);
      await refused(
        (o, l) => o.set(l.policy, { limit: 5 }, { actor: 'a'.repeat(513) }),
        TypeError,
        /actor must be text/,
      );
    });

    // Attacks: each of these reached the store.
    it('a change whose only field is undefined changes nothing (JSON drops it: every reader ignores what is stored)', () =>
      refused((o, l) => o.set(l.policy, { limit: undefined }), TypeError, /changes nothing/));
    it('burst on a fixed-window policy is refused as the policy refuses it (not silently dropped)', () =>
      refused((o, l) => o.set(l.policy, { limit: 6, burst: 3 }), RangeError, /burst applies to/));
    it('clear() with a policy that is not a string is refused before the store', () =>
      refused((o) => o.clear(42 as never), TypeError, /policy/));
  });

  describe('an unreadable stored value is ignored with a warning, never a crash', () => {
    const garbage = [
      ['a newer format', '9:0::{"f":2,"policy":"api","scope":"","change":{"limit":1},"actor":"x"}'],
      ['not an override at all', 'garbage'],
      ['bad JSON', '3:0::{"f":1,'],
      ['JSON null', '3:0::null'],
      [
        'a scope that is not text',
        '3:0::{"f":1,"policy":"api","scope":7,"change":{"limit":1},"actor":"x"}',
      ],
      [
        'a change that is an array',
        '3:0::{"f":1,"policy":"api","scope":"","change":[1],"actor":"x"}',
      ],
      [
        'from not a number',
        '3:0::{"f":1,"policy":"api","scope":"","change":{"limit":1},"from":"x","actor":"x"}',
      ],
    ] as const;

    it.each(garbage)('%s', async (_what, value) => {
      const { overrides, limiter, store, warnings } = await setup();
      await overrides.set(limiter.policy, { limit: 7 }, { scope: 'ok:' });
      await storeRaw(store, 'api\n', value);
      await expect(overrides.refresh()).resolves.toBe(false);
      expect(warnings.join('\n')).toMatch(/cannot read is ignored/);
      expect(await admitted(limiter, 'k', 10)).toBe(5);
      // the readable override next to it still applies
      expect(await admitted(limiter, 'ok:1', 10)).toBe(7);
      // warned once, not on every poll
      const count = warnings.length;
      await overrides.refresh();
      expect(warnings.length).toBe(count);
    });

    it.each([
      ['a negative limit', '{"limit":-3}', /limit/],
      // (fields a change never has: the stored text is not an override of ours, shown as it is)
      ['a window change', '{"window":"2m"}', /"window":"2m"/],
      ['an unknown field', '{"limit":3,"evil":1}', /"evil"/],
      ['a __proto__ key', '{"__proto__":{"limit":1}}', /__proto__/],
      ['limits of the wrong count', '{"limits":[{"limit":1},{"limit":2}]}', /limits must list/],
      ['a bad lockout', '{"block":{"duration":"soon"}}', /block/],
      ['an empty change', '{}', /changes nothing/],
    ])(
      'a readable override with an invalid change (%s) is skipped with a warning',
      async (_w, change, why) => {
        const { overrides, limiter, store, warnings } = await setup();
        await storeRaw(
          store,
          'api\n',
          `5:0::{"f":1,"policy":"api","scope":"","change":${change},"actor":"x"}`,
        );
        await overrides.refresh();
        expect(await admitted(limiter, 'k', 10)).toBe(5);
        expect(warnings.join('\n')).toMatch(/is ignored/);
        expect(warnings.join('\n')).toMatch(why);
      },
    );

    it('an invalid scoped layer over a valid global one: the scoped key keeps the global override', async () => {
      const { overrides, limiter, store, warnings } = await setup();
      await overrides.set(limiter.policy, { limit: 3 });
      await storeRaw(
        store,
        'api\nbad:',
        `99:0::{"f":1,"policy":"api","scope":"bad:","change":{"limit":0},"actor":"x"}`,
      );
      await overrides.refresh();
      expect(await admitted(limiter, 'bad:1', 10)).toBe(3);
      expect(warnings.join('\n')).toMatch(/scope 'bad:'/);
    });

    it('a start() on a store holding only garbage resolves and the limiter runs on its policy', async () => {
      const clock = new TestClock();
      const store = backend.store(clock);
      await storeRaw(store, 'api\n', 'garbage');
      const warnings: string[] = [];
      const overrides = new PolicyOverrides(store.overrides!(), {
        pollMs: 50,
        onWarning: (m) => warnings.push(m),
      });
      started.push(overrides);
      await expect(overrides.start()).resolves.toBeUndefined();
      const limiter = new Limiter(store, API, { overrides });
      expect(await admitted(limiter, 'k', 10)).toBe(5);
      expect(warnings).toHaveLength(1);
    });
  });

  describe('shadow and failMode overrides', () => {
    it('shadow: refusals are let through with shadowRefused; cleared, refused again', async () => {
      const { overrides, limiter } = await setup({ ...API, limit: 2 });
      await overrides.set(limiter.policy, { shadow: true }, { scope: 's:' });
      const ds = [];
      for (let i = 0; i < 4; i++) ds.push(await limiter.consume('s:1'));
      expect(ds.map((d) => d.allowed)).toEqual([true, true, true, true]);
      expect(ds.map((d) => d.shadowRefused === true)).toEqual([false, false, true, true]);
      expect(await admitted(limiter, 'n:1', 4)).toBe(2);
      await overrides.clear('api', { scope: 's:' });
      expect((await limiter.consume('s:1')).allowed).toBe(false);
    });

    it('shadow off over a shadow policy: refusals are refusals', async () => {
      const { overrides, limiter } = await setup({ ...API, limit: 2, shadow: true });
      expect(await admitted(limiter, 'a', 4)).toBe(4);
      await overrides.set(limiter.policy, { shadow: false });
      expect(await admitted(limiter, 'b', 4)).toBe(2);
    });

    const failing = (store: Store, policy: PolicyOptions, overrides: PolicyOverrides) => {
      // A RedisStore on a client that is closed: every call fails. The overrides are read from
      // the backend's (healthy) store.
      const dead = createTestClient({ lazyConnect: true, enableOfflineQueue: false });
      closing.push(dead);
      dead.disconnect();
      void store;
      return new Limiter(new RedisStore({ client: dead, prefix: 'dead:' }), policy, {
        overrides,
        timeoutMs: 500,
      });
    };

    it('failMode: an override to open lets calls through while the store fails; scoped only where it applies', async () => {
      const { overrides, store } = await setup();
      const limiter = failing(store, { ...API, failMode: 'closed' }, overrides);
      const closed = await limiter.consume('k');
      expect(closed.allowed).toBe(false);
      expect(closed.failure?.failMode).toBe('closed');
      await overrides.set(limiter.policy, { failMode: 'open' }, { scope: 'pub:' });
      const open = await limiter.consume('pub:1');
      expect(open.allowed).toBe(true);
      expect(open.failure?.failMode).toBe('open');
      const still = await limiter.consume('priv:1');
      expect(still.allowed).toBe(false);
      expect(still.failure?.failMode).toBe('closed');
      await overrides.set(limiter.policy, { failMode: 'closed' }, { scope: 'pub:' });
      expect((await limiter.consume('pub:1')).failure?.failMode).toBe('closed');
    });

    it('failMode: an override to closed refuses while the store fails', async () => {
      const { overrides, store } = await setup();
      const limiter = failing(store, { ...API, failMode: 'open' }, overrides);
      expect((await limiter.consume('k')).allowed).toBe(true);
      await overrides.set(limiter.policy, { failMode: 'closed' });
      const d = await limiter.consume('k');
      expect(d.allowed).toBe(false);
      expect(d.failure?.failMode).toBe('closed');
      await expect(limiter.attempt('k', () => Promise.resolve(1))).rejects.not.toHaveProperty(
        'name',
        'RateLimitedError',
      );
    });

    it('shadow override with a failing store: nothing refused', async () => {
      const { overrides, store } = await setup();
      const limiter = failing(store, { ...API, failMode: 'closed' }, overrides);
      await overrides.set(limiter.policy, { shadow: true });
      const d = await limiter.consume('k');
      expect(d.allowed).toBe(true);
      expect(d.shadowRefused).toBe(true);
    });
  });

  describe.each(RATE_ALGORITHMS)('refunds across a change (%s)', (algorithm) => {
    const policy: PolicyOptions = { name: 'r', algorithm, limit: 10, window: '1m' };

    it('a spend made under limit 10, refunded after a raise to 20, gives back exactly its units', async () => {
      const { overrides, limiter } = await setup(policy);
      const r0 = await limiter.consume('k', { cost: 3 });
      expect(r0.allowed).toBe(true);
      for (let i = 0; i < 4; i++) expect((await limiter.consume('k')).allowed).toBe(true);
      await overrides.set(limiter.policy, { limit: 20 });
      for (let i = 0; i < 2; i++) await limiter.consume('k');
      const before = await left(limiter, 'k');
      await limiter.refund(r0);
      expect(await left(limiter, 'k')).toBe(before + 3);
      await limiter.refund(r0); // once only
      expect(await left(limiter, 'k')).toBe(before + 3);
    });

    it('a spend made under limit 20, refunded after a lower to 10, never creates room above 10', async () => {
      const { overrides, limiter } = await setup({ ...policy, limit: 20 });
      const r0 = await limiter.consume('k', { cost: 3 });
      await overrides.set(limiter.policy, { limit: 10 });
      await limiter.refund(r0);
      expect(await left(limiter, 'k')).toBeLessThanOrEqual(10);
      expect(await admitted(limiter, 'k', 30)).toBeLessThanOrEqual(10);
    });

    it('a spend under limit 10 refunded after a raise to 20 and a refill past 10 is exact', async () => {
      const { overrides, limiter, clock } = await setup(policy);
      const r0 = await limiter.consume('k', { cost: 1 });
      const r1 = await limiter.consume('k', { cost: 5 });
      await overrides.set(limiter.policy, { limit: 20 });
      clock.advance(15_000); // a quarter of the window: buckets refill 5 at 20 per minute
      const before = await left(limiter, 'k');
      await limiter.refund(r1);
      const after = await left(limiter, 'k');
      expect(after).toBe(Math.min(20, before + 5));
      void r0;
    });
  });

  describe('grant under an override', () => {
    it('grant room is checked against the limits in force for the keys', async () => {
      const { overrides, limiter } = await setup();
      await overrides.set(limiter.policy, { limit: 10 }, { scope: 'big:' });
      expect(await admitted(limiter, 'big:1', 12)).toBe(10);
      await limiter.grant('big:1', 8); // above the base limit 5, within the override's 10
      expect(await left(limiter, 'big:1')).toBe(8);
      expect(await admitted(limiter, 'big:1', 12)).toBe(8);
      // lowered: a grant never makes more room than the limit in force
      await overrides.set(limiter.policy, { limit: 3 }, { scope: 'big:' });
      expect(await admitted(limiter, 'big:2', 5)).toBe(3);
      await limiter.grant('big:2', 8);
      expect(await left(limiter, 'big:2')).toBe(3);
      expect(await admitted(limiter, 'big:2', 5)).toBe(3);
      // no override for these keys: the base limit
      expect(await admitted(limiter, 'small:1', 8)).toBe(5);
      await limiter.grant('small:1', 8);
      expect(await left(limiter, 'small:1')).toBe(5);
    });
  });
});
