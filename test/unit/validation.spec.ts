import { Limiter, MemoryStore, type PolicyOptions, RedisStore, type Store } from '../../lib';

/** A store that fails the test if anything reaches it. */
const untouchable: Store = {
  consume: () => Promise.reject(new Error('store touched')),
  peek: () => Promise.reject(new Error('store touched')),
  refund: () => Promise.reject(new Error('store touched')),
  reset: () => Promise.reject(new Error('store touched')),
};

const valid: PolicyOptions = { name: 'login', algorithm: 'fixed-window', limit: 5, window: '1m' };

describe('bad input is rejected before the store is touched', () => {
  const limiter = new Limiter(untouchable, valid);

  it.each<[string, unknown, RegExp]>([
    ['an empty key list', [], /keys must be a non-empty/],
    ['an empty key', '', /keys\[0\] must be a non-empty string/],
    ['a non-string key', ['ok', 42], /keys\[1\] must be a non-empty string; got 42/],
    ['a null key list', null, /keys must be/],
  ])('consume with %s → TypeError naming keys', async (_title, keys, message) => {
    await expect(limiter.consume(keys as string[])).rejects.toThrow(TypeError);
    await expect(limiter.consume(keys as string[])).rejects.toThrow(message);
    await expect(limiter.peek(keys as string[])).rejects.toThrow(message);
    await expect(limiter.reset(keys as string[])).rejects.toThrow(message);
    await expect(limiter.attempt(keys as string[], () => 1)).rejects.toThrow(message);
  });

  it.each([0, -1, 1.5, 6, NaN, Infinity, '2'])('cost %p → RangeError naming cost', async (cost) => {
    await expect(limiter.consume('k', { cost: cost as number })).rejects.toThrow(RangeError);
    await expect(limiter.consume('k', { cost: cost as number })).rejects.toThrow(/cost/);
  });

  it('refund of something that is not a decision → TypeError', async () => {
    await expect(limiter.refund({} as never)).rejects.toThrow(TypeError);
  });
});

describe('invalid policies throw at construction', () => {
  it.each<[string, Partial<PolicyOptions> & Record<string, unknown>, RegExp]>([
    ['limit 0', { limit: 0 }, /policy\.limit must be a whole number/],
    ['limit NaN', { limit: NaN }, /policy\.limit/],
    ['limit Infinity', { limit: Infinity }, /policy\.limit/],
    ['limit 2.5', { limit: 2.5 }, /policy\.limit/],
    ['window 0', { window: 0 }, /policy\.window must be a whole number of milliseconds/],
    ["window '-1m'", { window: '-1m' }, /policy\.window must be a positive duration/],
    ["window 'soon'", { window: 'soon' }, /policy\.window.*'soon'/],
    ['window missing', { window: undefined }, /policy\.window is required/],
    ['unknown algorithm', { algorithm: 'leaky' as never }, /policy\.algorithm must be one of/],
    ['a name with braces', { name: 'a{b}' }, /policy\.name/],
    ['limit × window past 2^53', { limit: 2 ** 40, window: '1d' }, /2\^53/],
    [
      'a bad entry in limits',
      { limits: [{ limit: 1, window: 'x' }] },
      /policy\.limits\[0\]\.window/,
    ],
    ['a sliding log past 100000', { algorithm: 'sliding-log', limit: 100_001 }, /at most 100000/],
    ['burst on a fixed window', { burst: 5 }, /burst applies to 'token-bucket' and 'gcra' only/],
    ['burst 0', { algorithm: 'token-bucket', burst: 0 }, /policy\.burst must be a whole number/],
  ])('%s', (_title, override, message) => {
    const policy = { ...valid, ...override };
    const construct = () => new Limiter(untouchable, policy);
    expect(construct).toThrow(message);
    expect(construct).toThrow(/^/);
    try {
      construct();
    } catch (error) {
      expect(error instanceof TypeError || error instanceof RangeError).toBe(true);
    }
  });

  it('a policy with neither limit nor limits', () => {
    expect(() => new Limiter(untouchable, { name: 'x', algorithm: 'fixed-window' })).toThrow(
      /needs limit and window/,
    );
  });

  it('a store that is not a store', () => {
    expect(() => new Limiter({} as Store, valid)).toThrow(TypeError);
  });
});

describe('RedisStore options', () => {
  it.each<[string, unknown, RegExp]>([
    ['no client', {}, /options\.client must be an ioredis/],
    ['a client that is not ioredis', { client: { get: () => 1 } }, /options\.client/],
    ['a non-string prefix', { client: { defineCommand: () => 1 }, prefix: 5 }, /options\.prefix/],
    [
      'a clock that is not a function',
      { client: { defineCommand: () => 1 }, clock: 5 },
      /options\.clock/,
    ],
    [
      'an option it does not know',
      { client: { defineCommand: () => 1 }, coalesced: false },
      /options\.coalesced is not an option/,
    ],
  ])('%s → TypeError', (_title, options, message) => {
    expect(() => new RedisStore(options as never)).toThrow(TypeError);
    expect(() => new RedisStore(options as never)).toThrow(message);
  });
});

describe('Limiter options', () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    ['timeoutMs 0', { timeoutMs: 0 }, /timeoutMs/],
    ['timeoutMs 1.5', { timeoutMs: 1.5 }, /timeoutMs/],
    ['failMode "maybe"', { failMode: 'maybe' }, /failMode/],
    ['failureRetryAfterMs -1', { failureRetryAfterMs: -1 }, /failureRetryAfterMs/],
  ])('%s → RangeError', (_title, options, message) => {
    expect(() => new Limiter(untouchable, valid, options)).toThrow(RangeError);
    expect(() => new Limiter(untouchable, valid, options)).toThrow(message);
  });

  it("failMode 'memory' needs a store with an in-process fallback; MemoryStore has one", () => {
    expect(() => new Limiter(untouchable, valid, { failMode: 'memory' })).toThrow(
      /failMode 'memory' needs a store with an in-process fallback/,
    );
    expect(() => new Limiter(untouchable, { ...valid, failMode: 'memory' })).toThrow(TypeError);
    expect(new Limiter(new MemoryStore(), valid, { failMode: 'memory' }).failMode).toBe('memory');
  });

  it("a policy's own failMode wins over the limiter's", () => {
    const limiter = new Limiter(
      untouchable,
      { ...valid, failMode: 'open' },
      { failMode: 'closed' },
    );
    expect(limiter.failMode).toBe('open');
    expect(() => new Limiter(untouchable, { ...valid, failMode: 'x' as never })).toThrow(
      /policy\.failMode/,
    );
  });
});
