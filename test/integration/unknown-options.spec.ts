import {
  type ConsumeOptions,
  Limiter,
  type LimiterOptions,
  MemoryStore,
  type PolicyOptions,
  RedisStore,
  type StackPart,
  type Store,
} from '../../lib';
import { backends, TestClock } from '../support/backends';

const stores = backends('unknown-options');

const policy: PolicyOptions = { name: 'typo', algorithm: 'fixed-window', limit: 10, window: '1m' };

/** An options object with a misspelt name, as plain JavaScript (or a cast) can pass it. */
const typo = <T>(options: Record<string, unknown>): T => options as T;

describe.each(stores)('$name store: an unknown option is an error, never ignored', (backend) => {
  let store: Store;
  let limiter: Limiter;
  beforeEach(() => {
    store = backend.store(new TestClock());
    limiter = new Limiter(store, policy);
  });

  /** The budget left on 'k' (10 before anything is charged). */
  const left = async () => (await limiter.peek('k')).remaining + 1;

  it('consume, peek, begin, attempt and waitFor refuse a misspelt cost; nothing is charged', async () => {
    const costs = typo<ConsumeOptions>({ costs: 8 });
    await expect(limiter.consume('k', costs)).rejects.toThrow(
      new TypeError('consume() options.costs is not an option (known: cost)'),
    );
    await expect(limiter.peek('k', costs)).rejects.toThrow(/^peek\(\) options\.costs is not/);
    await expect(limiter.begin('k', costs)).rejects.toThrow(/^begin\(\) options\.costs is not/);
    const body = jest.fn();
    await expect(limiter.attempt('k', body, costs)).rejects.toThrow(
      /^attempt\(\) options\.costs is not an option/,
    );
    expect(body).not.toHaveBeenCalled();
    await expect(limiter.waitFor('k', { maxWaitMs: 10, ...costs })).rejects.toThrow(
      /^waitFor\(\) options\.costs is not an option \(known: maxWaitMs, signal, cost\)/,
    );
    expect(await left()).toBe(10);
  });

  it('options that are not an object are refused (a cost passed where the options go)', async () => {
    for (const options of [8, 'cost', null, [8]]) {
      await expect(limiter.consume('k', typo<ConsumeOptions>(options as never))).rejects.toThrow(
        /^consume\(\) options must be an object \{ cost\? \}/,
      );
    }
    expect(await left()).toBe(10);
  });

  it('refund, adjust and reset refuse an argument they do not take', async () => {
    const spent = await limiter.consume('k', { cost: 4 });
    const partial = limiter.refund as (target: unknown, options: unknown) => Promise<boolean>;
    await expect(partial.call(limiter, spent, { cost: 2 })).rejects.toThrow(
      new TypeError('refund() takes one argument (a Decision or its Receipt); got 2'),
    );
    const adjust = limiter.adjust as (t: unknown, c: number, o: unknown) => Promise<boolean>;
    await expect(adjust.call(limiter, spent, 1, { force: true })).rejects.toThrow(
      /^adjust\(\) takes two arguments/,
    );
    const reset = limiter.reset as (keys: string, options: unknown) => Promise<void>;
    await expect(reset.call(limiter, 'k', { all: true })).rejects.toThrow(
      /^reset\(\) takes one argument \(the keys\); got 2/,
    );
    expect(await left()).toBe(6); // none was applied
    expect(await limiter.refund(spent)).toBe(true);
    expect(await left()).toBe(10);
  });

  it('refundAll, releaseAll and adjustAll refuse an argument they do not take', async () => {
    const stacked = await Limiter.consumeAll([{ limiter, keys: 'k', cost: 4 }]);
    const refundAll = Limiter.refundAll as (s: unknown, o: unknown) => Promise<boolean>;
    await expect(refundAll(stacked, { cost: 2 })).rejects.toThrow(
      /^refundAll\(\) takes one argument/,
    );
    const releaseAll = Limiter.releaseAll as (s: unknown, o: unknown) => Promise<boolean>;
    await expect(releaseAll(stacked, {})).rejects.toThrow(/^releaseAll\(\) takes one argument/);
    const adjustAll = Limiter.adjustAll as (s: unknown, c: unknown, o: unknown) => Promise<boolean>;
    await expect(adjustAll(stacked, [1], {})).rejects.toThrow(/^adjustAll\(\) takes two/);
    expect(await left()).toBe(6);
    expect(await Limiter.refundAll(stacked)).toBe(true);
    expect(await left()).toBe(10);
  });

  it('a stack part with a misspelt field is refused, naming the part; nothing is charged', async () => {
    const other = new Limiter(store, { ...policy, name: 'typo-2' });
    const parts = [{ limiter: other, keys: 'k' }, typo<StackPart>({ limiter, keys: 'k', Cost: 8 })];
    const message = 'consumeAll() parts[1].Cost is not an option (known: limiter, keys, cost)';
    await expect(Limiter.consumeAll(parts)).rejects.toThrow(new TypeError(message));
    await expect(Limiter.peekAll(parts)).rejects.toThrow(/^peekAll\(\) parts\[1\]\.Cost/);
    await expect(Limiter.waitForAll(parts, { maxWaitMs: 10 })).rejects.toThrow(
      /^consumeAll\(\) parts\[1\]\.Cost/,
    );
    expect(await left()).toBe(10);
    expect((await other.peek('k')).remaining).toBe(9);
  });

  it('a Limiter refuses a misspelt option at construction', () => {
    expect(() => new Limiter(store, policy, typo<LimiterOptions>({ failmode: 'open' }))).toThrow(
      /^Limiter options\.failmode is not an option \(known: failMode, timeoutMs, /,
    );
    expect(() => new Limiter(store, policy, typo<LimiterOptions>('open' as never))).toThrow(
      /^Limiter options must be an object/,
    );
  });

  it('the store refuses a misspelt option at construction', () => {
    const make =
      backend.name === 'memory'
        ? (options: Record<string, unknown>) => new MemoryStore(typo(options))
        : (options: Record<string, unknown>) =>
            new RedisStore(typo({ client: backend.storeClient, ...options }));
    expect(() => make({ clok: () => 0 })).toThrow(
      new RegExp(
        `^${backend.name === 'memory' ? 'Memory' : 'Redis'}Store options\\.clok is not an option`,
      ),
    );
    if (backend.name === 'memory') {
      expect(() => new MemoryStore(typo(null as never))).toThrow(
        /^MemoryStore options must be an object/,
      );
    } else {
      expect(() => make({ refusalCache: { max: 5 } })).toThrow(
        /^RedisStore options\.refusalCache\.max is not an option/,
      );
    }
  });
});
