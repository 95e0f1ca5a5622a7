// The public face of the stores: the two stores, their options and the client shapes they accept.
// Key layout helpers (storage keys, ledgers, epochs) and the refusal cache's class are internal.
export { MemoryStore, type MemoryStoreOptions } from './memory.store';
export { type RedisClient, RedisStore, type RedisStoreOptions } from './redis.store';
export type {
  IoredisLikeClient,
  NodeRedisClusterNode,
  NodeRedisLikeClient,
  NodeRedisLikeCluster,
  NodeRedisLikeSentinel,
  RedisStoreClient,
} from './clients/redis-client.shape';
export type { FleetView } from './fleet';
export type { LostReplyCounts } from './lost-replies';
export type { FleetState } from './redis-fleet';
export type { RefusalCacheOptions } from './refusal-cache';
export type {
  AdjustRequest,
  EpochReading,
  GrantRequest,
  RefundRequest,
  ResetRequest,
  SpendRequest,
  SpendResult,
  StackResult,
  Store,
} from './store.interface';
export type {
  AuditEntry,
  BoardBook,
  BoardLockout,
  BoardOutcome,
  BoardRefusal,
  BoardWrite,
  PolicyCard,
  RateCount,
  RefusalKind,
} from './board-book';
