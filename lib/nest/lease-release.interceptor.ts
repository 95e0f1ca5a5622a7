import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  Logger,
  type NestInterceptor,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { finalize, type Observable } from 'rxjs';
import type { Decision } from '../core/decision';
import type { Limiter } from '../core/limiter';
import { leaseReleaseWarning, releaseLeases } from './lease-release.util';
import { REDLIMIT_METADATA } from './redlimit.constants';

/** Leases a guard took for one handler call outside HTTP, by the call's argument list. */
const leasesByCall = new WeakMap<object, ReadonlyArray<{ limiter: Limiter; decision: Decision }>>();

/**
 * Leaves the `concurrency` leases of a handler call that has no Node response (WebSocket,
 * microservice) for {@link LeaseReleaseInterceptor}, which releases them when the handler settles.
 * Nest hands the guard and the interceptors of one call the same argument list.
 *
 * @example
 * holdLeasesForCall(context.getArgs(), [{ limiter, decision }]);
 */
export function holdLeasesForCall(
  args: readonly unknown[],
  leases: ReadonlyArray<{ limiter: Limiter; decision: Decision }>,
): void {
  leasesByCall.set(args, leases);
}

/**
 * What `RedlimitModule` gives WebSocket and microservice handlers under `@Throttle` (see
 * {@link LeaseReleaseWiring}): releases the `concurrency` leases the guard took for the call when
 * the handler settles (returns, throws or its stream completes). HTTP calls (GraphQL over HTTP
 * too) are released by the guard on the response's `close` and never pass through it.
 *
 * @example
 * // attached when the app is built; nothing to register
 * @MessagePattern('export') @Throttle('exports-in-flight') export() {}
 */
export class LeaseReleaseInterceptor implements NestInterceptor {
  private readonly logger = new Logger('RedlimitGuard');

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const args = context.getArgs();
    const leases = leasesByCall.get(args);
    if (!leases) return next.handle();
    leasesByCall.delete(args);
    return next
      .handle()
      .pipe(
        finalize(() =>
          releaseLeases(leases, (error, decision) =>
            this.logger.warn(leaseReleaseWarning(decision, error)),
          ),
        ),
      );
  }
}

/** Where `@UseInterceptors` keeps a handler's interceptors (Nest's `INTERCEPTORS_METADATA`). */
const INTERCEPTORS_METADATA = '__interceptors__';
/** Nest's marks of a microservice handler (`@MessagePattern`, `@EventPattern`) and a gateway's. */
const NON_HTTP_HANDLER_METADATA = ['microservices:pattern', 'message'] as const;

/**
 * Gives every WebSocket and microservice handler under `@Throttle` the interceptor that releases
 * its `concurrency` leases when it settles, once, when the app is built (before Nest binds those
 * handlers), so HTTP routes carry no interceptor for it. Runs as a provider of `RedlimitModule`.
 */
@Injectable()
export class LeaseReleaseWiring {
  constructor(discovery: DiscoveryService) {
    const interceptor = new LeaseReleaseInterceptor();
    for (const wrapper of [...discovery.getControllers(), ...discovery.getProviders()]) {
      const type = wrapper.metatype as (abstract new (...args: never[]) => unknown) | null;
      if (typeof type !== 'function' || !type.prototype) continue;
      const throttledClass = readThrottle(type);
      for (const name of Object.getOwnPropertyNames(type.prototype)) {
        const handler = Object.getOwnPropertyDescriptor(type.prototype, name)?.value as unknown;
        if (typeof handler !== 'function' || name === 'constructor') continue;
        if (!NON_HTTP_HANDLER_METADATA.some((key) => Reflect.hasMetadata(key, handler))) continue;
        if (!throttledClass && !readThrottle(handler)) continue;
        const attached = (Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? []) as unknown[];
        if (attached.some((i) => i instanceof LeaseReleaseInterceptor)) continue;
        Reflect.defineMetadata(INTERCEPTORS_METADATA, [...attached, interceptor], handler);
      }
    }
  }
}

/** Whether `@Throttle` put layers on this class or handler. */
function readThrottle(target: object): boolean {
  const metadata = Reflect.getOwnMetadata(REDLIMIT_METADATA, target) as
    { throttle?: readonly unknown[] } | undefined;
  return (metadata?.throttle?.length ?? 0) > 0;
}
