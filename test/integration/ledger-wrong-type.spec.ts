import type Redis from 'ioredis';
import { type Algorithm, Limiter, RedisStore } from '../../lib';
import { ledgerKey, storageKey } from '../../lib/stores/storage-key.util';
import { createTestClient, uniquePrefix } from '../support/redis';

// A caller key's refund ledger that holds another type (written by something else on the same
// Redis): an allowed spend reads the ledger's reset mark for its receipt. The call must fail before
// it writes anything, as the store's failure says ("wrote nothing"): no spend the caller was told
// failed.

let client: Redis;
beforeAll(async () => {
  client = createTestClient();
  await Promise.all(Array.from({ length: 4 }, () => client.ping()));
});
afterAll(async () => {
  await client.quit();
});

const ALGORITHMS: Algorithm[] = [
  'fixed-window',
  'sliding-window',
  'token-bucket',
  'gcra',
  'sliding-log',
];

describe.each([true, false])('a ledger of another type (coalesce: %s)', (coalesce) => {
  it.each(ALGORITHMS)('%s: the spend fails and writes no state', async (algorithm) => {
    const store = new RedisStore({ client, prefix: uniquePrefix('ledger-type'), coalesce });
    const limiter = new Limiter(store, { name: 'p', algorithm, limit: 5, window: '1m' });
    await client.set(ledgerKey(store.prefix, 'k', 'p'), 'not a ledger');
    // Two at once: with coalescing the second goes in a batch of its own decisions.
    const decisions = await Promise.all([limiter.consume('k'), limiter.consume(['other', 'k'])]);
    for (const decision of decisions) expect(decision.failure?.reason).toBe('error');
    expect(await client.exists(storageKey(store.prefix, 'k', 'p', 0))).toBe(0);
    expect(await client.exists(storageKey(store.prefix, 'other', 'p', 0))).toBe(0);
  });
});
