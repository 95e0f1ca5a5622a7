import {
  type Algorithm,
  Attempt,
  type Decision,
  Limiter,
  MemoryStore,
  RateLimitedError,
  type StackPart,
  type Store,
  StoreUnavailableError,
} from '../../lib';
import { backends, TestClock } from '../support/backends';

const stores = backends('begin-all');

/** Units left before a spend, from a peek of cost 1 (which answers what would be left after it). */
const unitsLeft = (peek: Decision): number => (peek.allowed ? peek.remaining + 1 : 0);

describe.each(stores)('$name store: Limiter.beginAll', (backend) => {
  /** Per IP (limit 5) and per device (limit 2), as a trusted device's sign-in charges them. */
  const setup = (algorithm: Algorithm = 'fixed-window') => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const ip = new Limiter(store, { name: 'sign-in', algorithm, limit: 5, window: '15m' });
    const device = new Limiter(store, {
      name: 'sign-in.devices',
      algorithm: 'sliding-log',
      limit: 2,
      window: '30d',
    });
    const parts: StackPart[] = [
      { limiter: ip, keys: 'ip:203.0.113.7' },
      { limiter: device, keys: 'device:4f1c' },
    ];
    const left = async () => [
      unitsLeft(await ip.peek('ip:203.0.113.7')),
      unitsLeft(await device.peek('device:4f1c')),
    ];
    return { clock, store, ip, device, parts, left };
  };

  it('spends every part as one decision; decision is the first part’s, stacked the whole', async () => {
    const { parts, left } = setup();
    const attempt = await Limiter.beginAll(parts);
    expect(attempt).toBeInstanceOf(Attempt);
    expect(attempt.stacked?.allowed).toBe(true);
    expect(attempt.stacked?.decisions.map((d) => d.policy)).toEqual(['sign-in', 'sign-in.devices']);
    expect(attempt.decision).toBe(attempt.stacked?.decisions[0]);
    expect(attempt.leased).toBe(false);
    expect(await left()).toEqual([4, 1]);
    await attempt.settle(); // no refund: the cost stays on every part
    expect(await left()).toEqual([4, 1]);
  });

  it('an attempt of one policy has no stacked decision', async () => {
    const { ip } = setup();
    expect((await ip.begin('ip:203.0.113.7')).stacked).toBeUndefined();
  });

  it('refused: RateLimitedError carries the refusing part’s decision, and nothing is spent', async () => {
    const { parts, left } = setup();
    await (await Limiter.beginAll(parts)).settle();
    await (await Limiter.beginAll(parts)).settle();
    const error = await Limiter.beginAll(parts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    const { decision } = error as RateLimitedError;
    expect(decision.policy).toBe('sign-in.devices'); // the second part refused, not the first
    expect(decision.blockedBy?.key).toBe('device:4f1c');
    expect((error as RateLimitedError).retryAfterMs).toBeGreaterThan(0);
    expect(await left()).toEqual([3, 0]); // the ip part was not charged by the refusal
  });

  it.each(['fixed-window', 'sliding-window', 'token-bucket', 'gcra', 'sliding-log'] as const)(
    '%s: refund() gives every part back, exactly once however often it settles',
    async (algorithm) => {
      const { ip, parts, left } = setup(algorithm);
      const attempt = await Limiter.beginAll(parts);
      await ip.consume('ip:203.0.113.7'); // someone else's spend, which must stay
      attempt.refund();
      await Promise.all([attempt.settle(), attempt.settle()]);
      await attempt.settle();
      expect(await Limiter.refundAll(attempt.stacked!)).toBe(false); // already given back
      expect(await left()).toEqual([4, 2]);
      expect(() => attempt.refund()).toThrow(/settled/);
    },
  );

  it('adjust(n) settles every part to n', async () => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const a = new Limiter(store, { name: 'a', algorithm: 'fixed-window', limit: 10, window: '1m' });
    const b = new Limiter(store, { name: 'b', algorithm: 'sliding-log', limit: 8, window: '1h' });
    const attempt = await Limiter.beginAll([
      { limiter: a, keys: 'k', cost: 2 },
      { limiter: b, keys: 'k', cost: 2 },
    ]);
    attempt.adjust(5);
    expect(attempt.adjustedTo).toBe(5);
    await attempt.settle();
    expect((await a.peek('k')).remaining + 1).toBe(5);
    expect((await b.peek('k')).remaining + 1).toBe(3);
  });

  it('adjust(n) checks n against every part’s limits, not only the first’s', async () => {
    const store = backend.store(new TestClock());
    const short = new Limiter(store, {
      name: 'short',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1s',
    });
    const long = new Limiter(store, {
      name: 'long',
      algorithm: 'fixed-window',
      limit: 5,
      window: '366d',
    });
    const attempt = await Limiter.beginAll([
      { limiter: short, keys: 'k' },
      { limiter: long, keys: 'k' },
    ]);
    // Fine for a 1 s window, too large for a 366-day one (cost × window past 2^53).
    expect(() => attempt.adjust(1_000_000)).toThrow(/Attempt.adjust\(\): actualCost .*too large/);
    expect(() => attempt.adjust(-1)).toThrow(RangeError);
    expect(attempt.adjustedTo).toBeUndefined();
    await attempt.settle();
    expect((await long.peek('k')).remaining + 1).toBe(4); // the cost stays
  });

  describe('with a concurrency part', () => {
    const leasedSetup = () => {
      const store = backend.store(new TestClock());
      const rate = new Limiter(store, {
        name: 'rate',
        algorithm: 'fixed-window',
        limit: 5,
        window: '1m',
      });
      const inflight = new Limiter(store, {
        name: 'inflight',
        algorithm: 'concurrency',
        limit: 1,
        window: '30s',
      });
      const parts: StackPart[] = [
        { limiter: rate, keys: 'user:1' },
        { limiter: inflight, keys: 'user:1' },
      ];
      const left = async () => [
        unitsLeft(await rate.peek('user:1')),
        unitsLeft(await inflight.peek('user:1')),
      ];
      return { rate, inflight, parts, left };
    };

    it('settling without refund releases only the lease: the rate part keeps its cost', async () => {
      const { parts, left } = leasedSetup();
      const attempt = await Limiter.beginAll(parts);
      expect(attempt.leased).toBe(true);
      expect(await left()).toEqual([4, 0]);
      await attempt.settle();
      expect(await left()).toEqual([4, 1]);
    });

    it('refund() gives back the rate part and the lease', async () => {
      const { parts, left } = leasedSetup();
      const attempt = await Limiter.beginAll(parts);
      attempt.refund();
      await attempt.settle();
      expect(await left()).toEqual([5, 1]);
    });

    it('adjust(n) settles the rate part to n and releases the lease', async () => {
      const { parts, left } = leasedSetup();
      const attempt = await Limiter.beginAll(parts);
      attempt.adjust(3);
      await attempt.settle();
      expect(await left()).toEqual([2, 1]);
    });

    it('extend() renews the lease while held; false once settled, and for a stack without one', async () => {
      const { parts } = leasedSetup();
      const attempt = await Limiter.beginAll(parts);
      expect(await attempt.extend()).toBe(true);
      await attempt.settle();
      expect(await attempt.extend()).toBe(false);
      const { parts: rateOnly } = setup();
      const unleased = await Limiter.beginAll(rateOnly);
      expect(await unleased.extend()).toBe(false);
    });
  });

  it('extend() renews the lease for another window from now', async () => {
    const clock = new TestClock();
    const store = backend.store(clock);
    const rate = new Limiter(store, {
      name: 'rate',
      algorithm: 'fixed-window',
      limit: 9,
      window: '1h',
    });
    const inflight = new Limiter(store, {
      name: 'inflight',
      algorithm: 'concurrency',
      limit: 1,
      window: '30s',
    });
    const attempt = await Limiter.beginAll([
      { limiter: rate, keys: 'u' },
      { limiter: inflight, keys: 'u' },
    ]);
    clock.advance(20_000);
    expect(await attempt.extend()).toBe(true);
    clock.advance(20_000); // 40 s after the lease began, 20 s after its renewal: still held
    expect((await inflight.peek('u')).allowed).toBe(false);
    clock.advance(10_001);
    expect((await inflight.peek('u')).allowed).toBe(true);
  });
});

describe('Limiter.beginAll: arguments', () => {
  const store = new MemoryStore();
  const a = new Limiter(store, { name: 'a', algorithm: 'fixed-window', limit: 5, window: '1m' });
  const spy = () => jest.spyOn(store, 'consumeStack');
  afterEach(() => jest.restoreAllMocks());

  it.each([
    ['no parts', [], /non-empty array/],
    ['not an array', 'a', /non-empty array/],
    ['a part without a limiter', [{ keys: 'k' }], /part 0 needs a Limiter/],
    [
      'an unknown part field',
      [{ limiter: a, keys: 'k', costs: 2 }],
      /parts\[0\]\.costs is not an option/,
    ],
    ['an empty key', [{ limiter: a, keys: '' }], /keys\[0\] must be a non-empty string/],
    ['a cost above the limit', [{ limiter: a, keys: 'k', cost: 6 }], /cost 6 is above/],
    [
      'one policy and key twice',
      [
        { limiter: a, keys: 'k' },
        { limiter: a, keys: 'k' },
      ],
      /two parts/,
    ],
  ])('%s: an error naming it, before the store is touched', async (_what, parts, message) => {
    const consumeStack = spy();
    await expect(Limiter.beginAll(parts as unknown as StackPart[])).rejects.toThrow(message);
    expect(consumeStack).not.toHaveBeenCalled();
  });

  it('takes no options: a second argument is an error', async () => {
    const consumeStack = spy();
    const beginAll = Limiter.beginAll as (...args: unknown[]) => Promise<Attempt>;
    await expect(beginAll.call(Limiter, [{ limiter: a, keys: 'k' }], { cost: 2 })).rejects.toThrow(
      /beginAll\(\) takes one argument .*no options; got 2/,
    );
    expect(consumeStack).not.toHaveBeenCalled();
  });

  it('parts on different stores are refused', async () => {
    const other = new Limiter(new MemoryStore(), {
      name: 'c',
      algorithm: 'fixed-window',
      limit: 5,
      window: '1m',
    });
    await expect(
      Limiter.beginAll([
        { limiter: a, keys: 'k' },
        { limiter: other, keys: 'k' },
      ]),
    ).rejects.toThrow(/another store/);
  });

  it('a failing store: StoreUnavailableError with the part that fails closed', async () => {
    const failing: Store = Object.assign(new MemoryStore(), {
      consumeStack: () => Promise.reject(new Error('connection lost')),
    });
    const quiet = { onStoreFailure: () => undefined };
    const open = new Limiter(
      failing,
      { name: 'open', algorithm: 'fixed-window', limit: 5, window: '1m' },
      { ...quiet, failMode: 'open' },
    );
    const closed = new Limiter(
      failing,
      { name: 'closed', algorithm: 'fixed-window', limit: 5, window: '1m' },
      { ...quiet, failMode: 'closed' },
    );
    const error = await Limiter.beginAll([
      { limiter: open, keys: 'k' },
      { limiter: closed, keys: 'k' },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as StoreUnavailableError).decision.policy).toBe('closed');
    expect((error as StoreUnavailableError).message).toMatch(/connection lost/);
  });

  it('a store failing open on every part: allowed, uncharged, and settling sends nothing', async () => {
    const failing: Store = Object.assign(new MemoryStore(), {
      consumeStack: () => Promise.reject(new Error('connection lost')),
    });
    const options = { onStoreFailure: () => undefined, failMode: 'open' as const };
    const x = new Limiter(
      failing,
      { name: 'x', algorithm: 'fixed-window', limit: 5, window: '1m' },
      options,
    );
    const attempt = await Limiter.beginAll([{ limiter: x, keys: 'k' }]);
    expect(attempt.decision.failure?.failMode).toBe('open');
    const refund = jest.spyOn(failing, 'refund');
    attempt.refund();
    await attempt.settle();
    expect(refund).not.toHaveBeenCalled();
  });
});
