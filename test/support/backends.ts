import type Redis from 'ioredis';
import { MemoryStore, RedisStore, type Store } from '../../lib';
import { createTestClient, uniquePrefix, warmPool } from './redis';

/** A controllable clock, aligned to a whole hour so windows start at known instants. */
export class TestClock {
  static readonly BASE = 1_800_000_000_000; // a whole hour (and minute, and second)
  now = TestClock.BASE;
  readonly read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

/** One store implementation under test. */
export interface Backend {
  readonly name: 'redis' | 'memory';
  /** A fresh, isolated store (own key prefix on Redis), optionally on a test clock. */
  store(clock?: TestClock): Store;
  /** The Redis client (Redis backend only). */
  readonly client?: Redis;
}

/**
 * The two stores every guarantee is tested on. Call in a describe block; it opens a Redis client
 * before the specs, warms it, and closes it after.
 */
export function backends(specName: string): Backend[] {
  let client: Redis | undefined;
  beforeAll(async () => {
    client = createTestClient();
    await warmPool(client);
  });
  afterAll(async () => {
    await client?.quit();
  });
  const redis: Backend = {
    name: 'redis',
    store: (clock) =>
      new RedisStore({ client: client!, prefix: uniquePrefix(specName), clock: clock?.read }),
    get client() {
      return client;
    },
  };
  const memory: Backend = {
    name: 'memory',
    store: (clock) => new MemoryStore(clock ? { clock: clock.read } : {}),
  };
  return [redis, memory];
}
