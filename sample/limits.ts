import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { Limiter, MemoryStore, RedisStore, type Store } from '../lib';

/** Injection tokens of the sample's limiters. */
export const SIGN_IN_LIMITER = Symbol('SIGN_IN_LIMITER');
export const SEARCH_LIMITER = Symbol('SEARCH_LIMITER');

/** Redis when REDIS_URL is set, else the in-process MemoryStore (limits are then per process). */
export function createStore(): { store: Store; close: () => Promise<void> } {
  const url = process.env.REDIS_URL;
  if (!url) {
    new Logger('redlimit').warn(
      'REDIS_URL is not set: using the in-memory store, so limits are per process',
    );
    return { store: new MemoryStore(), close: () => Promise.resolve() };
  }
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  return {
    store: new RedisStore({ client, prefix: 'sample:' }),
    close: async () => void (await client.quit()),
  };
}

/** Sign-in: 5 failures per 15 minutes per IP and per account, spent as one decision. */
export const signInLimiter = (store: Store): Limiter =>
  new Limiter(store, { name: 'sign-in', algorithm: 'fixed-window', limit: 5, window: '15m' });

/** Search: 10 per minute per IP, no boundary bursts. */
export const searchLimiter = (store: Store): Limiter =>
  new Limiter(store, { name: 'search', algorithm: 'sliding-window', limit: 10, window: '1m' });
