/**
 * redlimit for NestJS: `RedlimitModule`, `LimiterRegistry`, `@Throttle` + `RedlimitGuard`,
 * `@Attempt` (on HTTP routes, GraphQL resolvers, WebSocket gateways and microservice handlers)
 * and the environment helper. Import from `redlimit/nest`; it also re-exports the
 * core, so one import is enough. (`redlimit` alone is the framework-free core.)
 *
 * `Attempt` here is the parameter decorator and, as a type, the core `Attempt` it hands over.
 * @packageDocumentation
 * @module redlimit/nest
 */
export * from '../core';
export * from '../stores';
export * from '../metrics';
export * from '../client';
export { Attempt } from './attempt.decorator';
export * from './access-denied.error';
export * from './access-list.util';
export * from './attempt.interceptor';
export * from './attempt-dispatch.interceptor';
export * from './lease-release.interceptor';
export * from './attempt-part.util';
export * from './client-ip.util';
export * from './context-field.util';
export * from './context-refusal.util';
export * from './execution-context.util';
export type { HttpRequestLike, HttpResponseLike } from './http-request.util';
export * from './identity-input.error';
export * from './identity-normalize.util';
export * from './ip-range.util';
export * from './key-hash.util';
export * from './key-secret-check.service';
export * from './limiter.registry';
export * from './options-from-env.util';
export * from './policy-names.util';
export * from './policy-spec.util';
export * from './rate-limit-graphql.error';
export * from './rate-limit-headers.util';
export * from './rate-limit.exception';
export * from './redlimit-access.service';
export * from './redlimit-config.error';
export * from './redlimit-connection.service';
export * from './redlimit-events.service';
export * from './redlimit-http.service';
export * from './redlimit-devices.service';
export * from './redlimit-options.interface';
export * from './redlimit.constants';
export * from './redlimit.guard';
export * from './redlimit.health';
export * from './redlimit.metadata';
export type { RedlimitModuleExtras } from './redlimit.module-definition';
export * from './redlimit.module';
export * from './redis-client.factory';
export * from './redis-sentinel.util';
export * from './skip-throttle.decorator';
export * from './throttle.decorator';
export * from './uncharged-attempt.util';
export * from './throttler-storage';
