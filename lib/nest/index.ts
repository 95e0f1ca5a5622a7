/**
 * redlimit for NestJS: `RedlimitModule`, `LimiterRegistry`, `@Throttle` + `RedlimitGuard`,
 * `@Attempt` (on HTTP routes, GraphQL resolvers, WebSocket gateways and microservice handlers)
 * and the environment helper. Import from `redlimit/nest`; it also re-exports the
 * core, so one import is enough. (`redlimit` alone is the framework-free core.)
 *
 * `Attempt` here is the parameter decorator and, as a type, the core `Attempt` it hands over.
 *
 * This list is the public API (api/redlimit-nest.api.md records it; `npm run api:check` compares).
 * Everything else in lib/nest is internal: import it from its file inside the package only.
 * @packageDocumentation
 * @module redlimit/nest
 */
export * from '../core';
export * from '../stores';
export * from '../metrics';
export * from '../client';

// The module, its options and its services.
export { RedlimitModule } from './module/redlimit.module';
export type {
  RedlimitConfigurableModule,
  RedlimitModuleAsyncOptions,
  RedlimitModuleExtras,
  RedlimitModuleForRootOptions,
} from './module/redlimit.module-definition';
export type {
  AccessListOptions,
  ClientIpHeader,
  ClientIpOptions,
  DevicesOptions,
  PolicyDefinition,
  RateLimitHeaderStyle,
  RedisConnectionOptions,
  RedlimitMetricsOptions,
  RedlimitModuleOptions,
} from '../config/redlimit-options.interface';
export type { RedisHostPort, RedisSentinelOptions } from '../config/redis-sentinel.util';
export { type EnvSource, redlimitOptionsFromEnv } from '../config/options-from-env.util';
export { parsePolicySpec } from '../config/policy-spec.util';
export { LimiterRegistry } from './registry/limiter.registry';
export { RedlimitHttp } from './contexts/redlimit-http.service';
export { RedlimitConnection } from './module/redlimit-connection.service';
export { RedlimitEvents } from './module/redlimit-events.service';
export { type DeviceLoginOptions, RedlimitDevices } from './attempt/redlimit-devices.service';

// The ops board.
export { RedlimitBoardModule } from './board/redlimit-board.module';
export type { BoardAuthorize, RedlimitBoardOptions } from './board/redlimit-board.options';
export { RedlimitBoard } from './board/redlimit-board.service';

// Decorators, the guard and the interceptor (with the token that replaces it in tests).
export { Throttle, type ThrottleOptions } from './throttle/throttle.decorator';
export { SkipThrottle } from './throttle/skip-throttle.decorator';
export { Attempt } from './attempt/attempt.decorator';
export { RedlimitGuard } from './throttle/redlimit.guard';
export { AttemptInterceptor } from './attempt/attempt.interceptor';
export { REDLIMIT_ATTEMPT_INTERCEPTOR } from './module/redlimit.constants';
export {
  type AttemptMetadata,
  type AttemptOptions,
  type AttemptOutcome,
  type AttemptPart,
  type AttemptPartFn,
  type AttemptPartSpec,
  type CostFn,
  type EffectiveRedlimitMetadata,
  type PolicyRef,
  type PolicyResolver,
  type PolicyResolverService,
  readRedlimitMetadata,
  type ThrottleKeyFn,
  type ThrottleMetadata,
  type ThrottleTracker,
} from './throttle/redlimit.metadata';

// Errors and refusals.
export {
  AccessDeniedException,
  AccessDeniedGraphQLError,
  type AccessDeniedPayload,
} from './access/access-denied.error';
export { IdentityInputError, type IdentityInputProblem } from '../http/identity-input.error';
export {
  type RateLimitErrorCode,
  type RateLimitErrorPayload,
  RateLimitGraphQLError,
  type RateLimitGraphQLErrorExtensions,
} from './contexts/rate-limit-graphql.error';
export {
  RateLimitExceededException,
  type RateLimitResponseBody,
  RateLimitUnavailableException,
} from './throttle/rate-limit.exception';
export { RedlimitConfigError } from '../config/redlimit-config.error';

// Helpers for key functions, guard subclasses and unlocking accounts.
export { canonicalIp, groupIp } from '../http/ip-address.util';
export { apiKeyHash, attemptKey, type AttemptKeyOptions } from '../http/key-hash.util';
export { normalizeIdentity } from '../http/identity-normalize.util';
export { contextField, type ContextFieldOptions } from './contexts/context-field.util';
export { contextRequest, contextResponse } from './contexts/execution-context.util';
export type { HttpRequestLike, HttpResponseLike } from '../http/http-request.util';

// Integrations: health, and @nestjs/throttler's storage.
export {
  type RedlimitHealthDetails,
  RedlimitHealthIndicator,
  type RedlimitHealthOptions,
  type RedlimitHealthResult,
} from './integrations/redlimit.health';
export {
  RedlimitThrottlerStorage,
  type RedlimitThrottlerStorageOptions,
  type ThrottlerStorageRecordLike,
} from './integrations/throttler-storage';
