export * from './memory.store';
export * from './redis.store';
export * from './clients/redis-client.shape';
export * from './storage-key.util';
export * from './store.interface';
export * from './refusal-cache';
