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
export { RedlimitModule } from './redlimit.module';
export type {
  RedlimitConfigurableModule,
  RedlimitModuleAsyncOptions,
  RedlimitModuleExtras,
  RedlimitModuleForRootOptions,
} from './redlimit.module-definition';
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
} from './redlimit-options.interface';
export type { RedisHostPort, RedisSentinelOptions } from './redis-sentinel.util';
export { type EnvSource, redlimitOptionsFromEnv } from './options-from-env.util';
export { parsePolicySpec } from './policy-spec.util';
export { LimiterRegistry } from './limiter.registry';
export { RedlimitHttp } from './redlimit-http.service';
export { RedlimitConnection } from './redlimit-connection.service';
export { RedlimitEvents } from './redlimit-events.service';
export { type DeviceLoginOptions, RedlimitDevices } from './redlimit-devices.service';

// Decorators, the guard and the interceptor (with the token that replaces it in tests).
export { Throttle, type ThrottleOptions } from './throttle.decorator';
export { SkipThrottle } from './skip-throttle.decorator';
export { Attempt } from './attempt.decorator';
export { RedlimitGuard } from './redlimit.guard';
export { AttemptInterceptor } from './attempt.interceptor';
export { REDLIMIT_ATTEMPT_INTERCEPTOR } from './redlimit.constants';
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
} from './redlimit.metadata';

// Errors and refusals.
export {
  AccessDeniedException,
  AccessDeniedGraphQLError,
  type AccessDeniedPayload,
} from './access-denied.error';
export { IdentityInputError, type IdentityInputProblem } from './identity-input.error';
export {
  type RateLimitErrorCode,
  type RateLimitErrorPayload,
  RateLimitGraphQLError,
  type RateLimitGraphQLErrorExtensions,
} from './rate-limit-graphql.error';
export {
  RateLimitExceededException,
  type RateLimitResponseBody,
  RateLimitUnavailableException,
} from './rate-limit.exception';
export { RedlimitConfigError } from './redlimit-config.error';

// Helpers for key functions, guard subclasses and unlocking accounts.
export { canonicalIp, groupIp } from './ip-address.util';
export { apiKeyHash, attemptKey, type AttemptKeyOptions } from './key-hash.util';
export { normalizeIdentity } from './identity-normalize.util';
export { contextField, type ContextFieldOptions } from './context-field.util';
export { contextRequest, contextResponse } from './execution-context.util';
export type { HttpRequestLike, HttpResponseLike } from './http-request.util';

// Integrations: health, and @nestjs/throttler's storage.
export {
  type RedlimitHealthDetails,
  RedlimitHealthIndicator,
  type RedlimitHealthOptions,
  type RedlimitHealthResult,
} from './redlimit.health';
export {
  RedlimitThrottlerStorage,
  type RedlimitThrottlerStorageOptions,
  type ThrottlerStorageRecordLike,
} from './throttler-storage';
