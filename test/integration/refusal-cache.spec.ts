import Redis from 'ioredis';
import { Limiter, type PolicyOptions, type Receipt, RedisStore } from '../../lib';
import { backends, TestClock } from '../support/backends';
import { startRedisServer, type StartedRedisServer, uniquePrefix } from '../support/redis';

const stores = backends('refusal-cache');
const redisBackends = stores.filter((b) => b.name !== 'memory');

const HOUR = 3_600_000;
const otp: PolicyOptions = { name: 'otp', algorithm: 'fixed-window', limit: 2, window: '1m' };

describe.each(redisBackends)('$name store: refusal cache × another process', (backend) => {
  // Two stores on one Redis and prefix: two processes of one app.
  const prefix = uniquePrefix('refusal-cache-processes');
  const processOf = (clock: TestClock, refusalCache: true | { maxAgeMs: number } = true) =>
    new RedisStore({ client: backend.client!, prefix, clock: clock.read, refusalCache });

  it('a reset in another process (a support unlock) reaches a cached refusal within maxAgeMs (1 s by default)', async () => {
    const clock = new TestClock();
    const a = new Limiter(processOf(clock), { ...otp, name: 'unlock' });
    const b = new Limiter(processOf(clock), { ...otp, name: 'unlock' });
    await a.consume('phone:1');
    await a.consume('phone:1');
    expect(await a.consume('phone:1')).toMatchObject({ allowed: false, retryAfterMs: 60_000 });
    expect((await a.consume('phone:1')).cached).toBe(true);
    await b.reset('phone:1'); // another process: A does not see it
    clock.advance(999);
    expect((await a.consume('phone:1')).cached).toBe(true); // within the bound
    clock.advance(1);
    expect(await a.consume('phone:1')).toMatchObject({ allowed: true });
  });

  it('a refund in another process reaches it within maxAgeMs too, and maxAgeMs sets the bound', async () => {
    const clock = new TestClock();
    const a = new Limiter(processOf(clock, { maxAgeMs: 5_000 }), { ...otp, name: 'refund' });
    const b = new Limiter(processOf(clock), { ...otp, name: 'refund' });
    const first = await a.consume('phone:2');
    await a.consume('phone:2');
    expect((await a.consume('phone:2')).allowed).toBe(false);
    await b.refund(JSON.parse(JSON.stringify(first.receipt)) as Receipt);
    clock.advance(4_999);
    expect((await a.consume('phone:2')).cached).toBe(true);
    clock.advance(1);
    expect((await a.consume('phone:2')).allowed).toBe(true);
  });

  it.each([0, -1, 1.5, Infinity, '1000'])('refuses maxAgeMs %p, naming it', (maxAgeMs) => {
    expect(() =>
      processOf(new TestClock(), { maxAgeMs } as unknown as { maxAgeMs: number }),
    ).toThrow(/options\.refusalCache\.maxAgeMs must be a whole number of ms of at least 1/);
  });
});

describe.each(redisBackends)('$name store: refusal cache', (backend) => {
  let clock: TestClock;
  let prefix: string;
  // (refusals kept for their whole wait: the specs below are about the cache within one process)
  const store = (
    options: { refusalCache?: true | { maxKeys?: number; maxAgeMs?: number } } = {
      refusalCache: { maxAgeMs: HOUR },
    },
  ) => new RedisStore({ client: backend.client!, prefix, clock: clock.read, ...options });
  beforeEach(() => {
    clock = new TestClock();
    prefix = uniquePrefix('refusal-cache');
  });

  async function exhaust(limiter: Limiter, key: string | string[]) {
    for (let i = 0; i < 2; i++) expect((await limiter.consume(key)).allowed).toBe(true);
    const refused = await limiter.consume(key);
    expect(refused.allowed).toBe(false);
    expect(refused.cached).toBeUndefined();
    return refused;
  }

  it('refuses the same call again from memory, its wait counted down, until the wait has passed', async () => {
    const limiter = new Limiter(store(), otp);
    const refused = await exhaust(limiter, 'phone:1');
    expect(refused.retryAfterMs).toBe(60_000);
    clock.advance(15_000);
    const again = await limiter.consume('phone:1');
    expect(again).toMatchObject({ allowed: false, cached: true, retryAfterMs: 45_000 });
    expect(again.blockedBy?.key).toBe('phone:1');
    clock.advance(44_999);
    expect(await limiter.consume('phone:1')).toMatchObject({ cached: true, retryAfterMs: 1 });
    clock.advance(1);
    const allowed = await limiter.consume('phone:1');
    expect(allowed.allowed).toBe(true);
    expect(allowed.cached).toBeUndefined();
  });

  it('only the same policy, keys and cost are answered from memory; peeks never', async () => {
    const limiter = new Limiter(store(), { ...otp, limit: 3 });
    await limiter.consume('phone:1');
    await limiter.consume('phone:1', { cost: 2 });
    expect((await limiter.consume('phone:1', { cost: 2 })).allowed).toBe(false);
    expect((await limiter.consume('phone:1', { cost: 2 })).cached).toBe(true);
    expect((await limiter.consume('phone:1')).cached).toBeUndefined(); // cost 1: asks Redis
    expect((await limiter.peek('phone:1', { cost: 2 })).cached).toBeUndefined();
    expect((await limiter.consume(['phone:1', 'ip:1'], { cost: 2 })).cached).toBeUndefined();
    const other = new Limiter(limiter.store, { ...otp, name: 'otp-2', limit: 3 });
    expect((await other.consume('phone:1', { cost: 2 })).allowed).toBe(true);
  });

  it('a refund or reset through this store forgets the refusals of its keys at once', async () => {
    const limiter = new Limiter(store(), otp);
    const first = await limiter.consume('phone:1');
    await limiter.consume('phone:1');
    await limiter.consume('phone:1');
    expect((await limiter.consume('phone:1')).cached).toBe(true);
    await limiter.refund(first);
    expect((await limiter.consume('phone:1')).allowed).toBe(true);
    expect((await limiter.consume('phone:1')).allowed).toBe(false);
    expect((await limiter.consume('phone:1')).cached).toBe(true);
    await limiter.reset('phone:1');
    expect((await limiter.consume('phone:1')).allowed).toBe(true);
  });

  it('a refund made through another store is not seen until the wait passes (documented)', async () => {
    const cached = new Limiter(store(), otp);
    const elsewhere = new Limiter(store({}), otp);
    const first = await elsewhere.consume('phone:1');
    await cached.consume('phone:1');
    await cached.consume('phone:1');
    await elsewhere.refund(first);
    expect(await cached.consume('phone:1')).toMatchObject({ allowed: false, cached: true });
    expect((await elsewhere.consume('phone:1')).allowed).toBe(true);
  });

  it('keeps at most maxKeys refusals, the least recently refused forgotten first', async () => {
    const limiter = new Limiter(store({ refusalCache: { maxKeys: 2, maxAgeMs: HOUR } }), {
      ...otp,
      limit: 1,
    });
    for (const key of ['a', 'b', 'c']) {
      await limiter.consume(key);
      await limiter.consume(key);
    }
    expect((await limiter.consume('a')).cached).toBeUndefined(); // forgotten: asks Redis
    expect((await limiter.consume('c')).cached).toBe(true);
  });

  it('a locked-out key is refused from memory until its lockout ends', async () => {
    const limiter = new Limiter(store(), { ...otp, block: { duration: '10m' } });
    const refused = await exhaust(limiter, 'phone:1');
    expect(refused.blockedUntil).toBe(clock.now + 600_000);
    clock.advance(300_000);
    expect(await limiter.consume('phone:1')).toMatchObject({
      cached: true,
      retryAfterMs: 300_000,
      blockedUntil: refused.blockedUntil,
    });
  });

  it('the store answers from memory when called directly too (no limiter)', async () => {
    const s = store();
    const request = {
      policy: 'direct',
      algorithm: 'fixed-window' as const,
      limits: [{ limit: 1, windowMs: 60_000, burst: 1 }],
      keys: ['phone:1'],
      cost: 1,
    };
    expect((await s.consume(request)).allowed).toBe(true);
    const refused = await s.consume(request);
    expect(refused.allowed).toBe(false);
    expect(refused.cached).toBeUndefined();
    expect(await s.consume(request)).toMatchObject({ allowed: false, cached: true });
    expect(s.rememberedRefusal(request)).toMatchObject({ allowed: false, cached: true });
    expect(s.rememberedRefusal({ ...request, cost: 2 })).toBeUndefined();
  });

  it('a remembered wait counts from when the refused call was issued, not from its reply', async () => {
    const s = store();
    const request = {
      policy: 'issued',
      algorithm: 'fixed-window' as const,
      limits: [{ limit: 1, windowMs: 60_000, burst: 1 }],
      keys: ['phone:1'],
      cost: 1,
    };
    expect((await s.consume(request)).allowed).toBe(true);
    clock.advance(10_000);
    const pending = s.consume(request); // issued (and the clock read) at 10 s
    clock.advance(20_000); // the clock moves on while the call is in flight
    const refused = await pending;
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: 50_000 });
    expect(refused.cached).toBeUndefined();
    clock.advance(29_999); // 1 ms before issue + wait
    expect(await s.consume(request)).toMatchObject({
      allowed: false,
      cached: true,
      retryAfterMs: 1,
    });
    clock.advance(1); // issue + wait: the window has ended; Redis decides, and allows
    const allowed = await s.consume(request);
    expect(allowed.cached).toBeUndefined();
    expect(allowed.allowed).toBe(true);
  });

  it('a refused stack is refused again from memory', async () => {
    const s = store();
    const ip = new Limiter(s, { ...otp, name: 'ip', limit: 5 });
    const phone = new Limiter(s, otp);
    const call = () =>
      Limiter.consumeAll([
        { limiter: ip, keys: 'ip:1' },
        { limiter: phone, keys: 'phone:1' },
      ]);
    await call();
    await call();
    expect((await call()).decisions.map((d) => d.cached)).toEqual([undefined, undefined]);
    const again = await call();
    expect(again.allowed).toBe(false);
    expect(again.refusedBy?.policy).toBe('otp');
    expect(again.decisions.map((d) => d.cached)).toEqual([true, true]);
    expect((await ip.peek('ip:1')).remaining).toBe(2);
  });
});

describe.each(stores)(
  '$name store: a refusal is remembered for its policy, not for a policy of the same name',
  (backend) => {
    let clock: TestClock;
    let prefix: string;
    /** The backend's store, with the refusal cache on where it has one (Redis). */
    const store = () =>
      backend.name === 'memory'
        ? backend.store(clock)
        : new RedisStore({
            client: backend.storeClient!,
            prefix,
            clock: clock.read,
            refusalCache: true,
          });
    beforeEach(() => {
      clock = new TestClock();
      prefix = uniquePrefix('refusal-cache-identity');
    });
    const x = (limit: number, more: Partial<PolicyOptions> = {}): PolicyOptions => ({
      name: 'x',
      algorithm: 'fixed-window',
      limit,
      window: '1m',
      ...more,
    });

    it('two limiters named x, limits 2 and 10: the limit-2 refusals do not answer the limit-10 one', async () => {
      const s = store();
      const two = new Limiter(s, x(2));
      const ten = new Limiter(s, x(10));
      await two.consume('k');
      await two.consume('k');
      expect((await two.consume('k')).allowed).toBe(false);
      expect((await two.consume('k')).allowed).toBe(false); // answered from the cache on Redis
      const decision = await ten.consume('k');
      expect(decision).toMatchObject({ allowed: true, limit: 10, remaining: 7 });
      expect(decision.cached).toBeUndefined();
      // Stacks and keys in any order, and costs, are told apart the same way.
      expect((await Limiter.consumeAll([{ limiter: two, keys: ['k', 'j'] }])).allowed).toBe(false);
      expect((await Limiter.consumeAll([{ limiter: two, keys: ['k', 'j'] }])).allowed).toBe(false);
      const stacked = await Limiter.consumeAll([{ limiter: ten, keys: ['k', 'j'] }]);
      expect(stacked.allowed).toBe(true);
      expect(stacked.decisions[0]!.cached).toBeUndefined();
    });

    it.each<[string, Partial<PolicyOptions>, Partial<PolicyOptions>]>([
      ['window', { window: '1m' }, { window: '1h' }],
      ['a second limit', {}, { limits: [{ limit: 50, window: '1h' }] }],
      ['a lockout', { block: { duration: '5m' } }, {}],
      ['the lockout', { block: { duration: '5m' } }, { block: { duration: '5m', restart: true } }],
    ])(
      'a policy of the same name and limit that differs in %s asks the store',
      async (_what, first, second) => {
        const s = store();
        const a = new Limiter(s, x(2, first));
        const b = new Limiter(s, x(2, second));
        await a.consume('k');
        await a.consume('k');
        await a.consume('k');
        expect((await a.consume('k')).allowed).toBe(false);
        expect((await b.consume('k')).cached).toBeUndefined();
      },
    );

    it('the same definition in another Limiter shares the cache (on Redis)', async () => {
      const s = store();
      const a = new Limiter(s, x(2));
      const b = new Limiter(s, x(2));
      await a.consume('k');
      await a.consume('k');
      expect((await a.consume('k')).allowed).toBe(false);
      const again = await b.consume('k');
      expect(again.allowed).toBe(false);
      expect(again.cached).toBe(backend.name === 'memory' ? undefined : true);
    });
  },
);

describe('refusal cache: no round trip, and options', () => {
  let server: StartedRedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
  });
  afterAll(async () => {
    await client.quit();
    await server.stop();
  });

  /** Script runs Redis counted so far (INFO commandstats: FCALL and EVALSHA). */
  async function scriptCalls(): Promise<number> {
    const info = await client.info('commandstats');
    let calls = 0;
    for (const match of info.matchAll(/cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/g)) {
      calls += Number(match[1]);
    }
    return calls;
  }

  it('Redis sees no command for calls answered from memory', async () => {
    const limiter = new Limiter(new RedisStore({ client, refusalCache: true }), {
      ...otp,
      limit: 1,
    });
    await limiter.consume('phone:1');
    await limiter.consume('phone:1');
    const before = await scriptCalls();
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => limiter.consume('phone:1')),
    );
    expect(answers.every((d) => d.cached === true && !d.allowed)).toBe(true);
    expect(await scriptCalls()).toBe(before);
  });

  it.each([
    ['yes', /options\.refusalCache must be true or \{ maxKeys\?, maxAgeMs\? \}/],
    [{ maxKeys: 0 }, /options\.refusalCache\.maxKeys must be a whole number of at least 1; got 0/],
    [{ max: 5 }, /options\.refusalCache\.max is not an option/],
  ])('refusalCache %j is refused, naming it', (refusalCache, message) => {
    expect(
      () =>
        new RedisStore({
          client,
          refusalCache: refusalCache as unknown as true,
        }),
    ).toThrow(message);
  });

  it('refusalCache: false is off', async () => {
    const limiter = new Limiter(new RedisStore({ client, refusalCache: false, prefix: 'off:' }), {
      ...otp,
      limit: 1,
    });
    await limiter.consume('phone:1');
    await limiter.consume('phone:1');
    expect((await limiter.consume('phone:1')).cached).toBeUndefined();
  });
});
