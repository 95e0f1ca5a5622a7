import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { Observable } from 'rxjs';
import { type LeaseHold, takeLeaseHolds } from './lease-release.util';
import { LimiterRegistry } from '../registry/limiter.registry';
import type { PolicyRef } from '../throttle/redlimit.metadata';
import { readRedlimitMetadata } from '../throttle/redlimit.metadata';

/**
 * What `RedlimitModule` gives every handler that can hold a `concurrency` lease of the guard
 * (see {@link LeaseReleaseWiring}): it watches the handler's result and releases the leases when
 * that settles (a promise settles, an Observable completes or errors), over HTTP once the
 * response is over too. A client that goes away does not release them: Nest keeps running the
 * handler. An Observable torn down before it settled (Nest does so when the client goes away)
 * leaves its leases to expire after their `window`, since the work behind it may go on unseen
 * (`from(promise)`). Calls without a lease pass through.
 *
 * @example
 * // attached when the app is built; nothing to register
 * @Get('export') @Throttle('exports-in-flight') export() {}
 */
export class LeaseReleaseInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const holds = takeLeaseHolds(context);
    if (!holds) return next.handle();
    for (const hold of holds) hold.watch();
    return watchSettling(next.handle(), holds);
  }
}

/**
 * Mirrors `source`; tells the holds when it completes or errors (settled) or is torn down
 * before that (abandoned).
 */
function watchSettling<T>(source: Observable<T>, holds: readonly LeaseHold[]): Observable<T> {
  return new Observable<T>((subscriber) => {
    let ended = false;
    const end = (settled: boolean) => {
      if (ended) return;
      ended = true;
      for (const hold of holds) {
        if (settled) hold.settle();
        else hold.abandon();
      }
    };
    const subscription = source.subscribe({
      next: (value) => subscriber.next(value),
      error: (error: unknown) => {
        end(true);
        subscriber.error(error);
      },
      complete: () => {
        end(true);
        subscriber.complete();
      },
    });
    return () => {
      subscription.unsubscribe();
      end(false);
    };
  });
}

/** Where `@UseInterceptors` keeps a handler's interceptors (Nest's `INTERCEPTORS_METADATA`). */
const INTERCEPTORS_METADATA = '__interceptors__';
/**
 * Nest's marks of a handler: an HTTP route's method (`@Get`…), a microservice handler's pattern
 * (`@MessagePattern`, `@EventPattern`), a gateway's message, a GraphQL resolver's type.
 */
const HANDLER_METADATA = [
  'method',
  'microservices:pattern',
  'message',
  'graphql:resolver_type',
] as const;

/**
 * Gives every handler that can hold a `concurrency` lease of the guard — one whose `@Throttle`
 * layers or the module's `defaultPolicy` name a concurrency policy, an inline one, a policy not
 * registered yet or a resolver (chosen per call) — the {@link LeaseReleaseInterceptor}, once,
 * when the app is built (before Nest binds the handlers). Every other route carries no
 * interceptor for it, so pays nothing per request. Runs as a provider of `RedlimitModule`.
 */
@Injectable()
export class LeaseReleaseWiring {
  constructor(discovery: DiscoveryService, registry: LimiterRegistry) {
    const interceptor = new LeaseReleaseInterceptor();
    for (const wrapper of [...discovery.getControllers(), ...discovery.getProviders()]) {
      const type = wrapper.metatype as (abstract new (...args: never[]) => unknown) | null;
      if (typeof type !== 'function' || !type.prototype) continue;
      for (const handler of methodsOf(type.prototype as object)) {
        if (!HANDLER_METADATA.some((key) => Reflect.hasMetadata(key, handler))) continue;
        if (!mayLease(handler, type, registry)) continue;
        const attached = (Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? []) as unknown[];
        if (attached.some((i) => i instanceof LeaseReleaseInterceptor)) continue;
        Reflect.defineMetadata(INTERCEPTORS_METADATA, [...attached, interceptor], handler);
      }
    }
  }
}

/** The methods of a class, inherited ones too (a base controller's routes). */
function methodsOf(prototype: object): Set<object> {
  const methods = new Set<object>();
  for (
    let p: object | null = prototype;
    p && p !== Object.prototype;
    p = Reflect.getPrototypeOf(p)
  ) {
    for (const name of Object.getOwnPropertyNames(p)) {
      if (name === 'constructor') continue;
      const value = Object.getOwnPropertyDescriptor(p, name)?.value as unknown;
      if (typeof value === 'function') methods.add(value);
    }
  }
  return methods;
}

/** Whether the guard can take a `concurrency` lease for this handler (see `RedlimitGuard`). */
function mayLease(handler: object, type: object, registry: LimiterRegistry): boolean {
  const { throttle, exclusive } = readRedlimitMetadata(handler, type);
  if (throttle === false) return false;
  const refs: PolicyRef[] = (throttle ?? []).map((layer) => layer.policy);
  if (!exclusive && registry.defaultPolicy !== undefined) refs.push(registry.defaultPolicy);
  return refs.some((ref) => leases(ref, registry));
}

/** Whether a policy reference can be a `concurrency` policy. */
function leases(ref: PolicyRef, registry: LimiterRegistry): boolean {
  if (typeof ref === 'function') return true; // chosen per call
  if (typeof ref === 'string') {
    return !registry.has(ref) || registry.get(ref).policy.algorithm === 'concurrency';
  }
  return ref.algorithm === 'concurrency';
}
