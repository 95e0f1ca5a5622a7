import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  Logger,
  type NestInterceptor,
} from '@nestjs/common';
import { finalize, type Observable } from 'rxjs';
import type { Decision } from '../core/decision';
import type { Limiter } from '../core/limiter';

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
 * What `@Throttle` attaches to its handlers (as `@UseInterceptors` would): releases the
 * `concurrency` leases the guard took for a WebSocket or microservice handler call when the
 * handler settles (returns, throws or its stream completes). HTTP calls (GraphQL over HTTP too)
 * are released by the guard on the response's `close`, and pass through untouched here.
 *
 * @example
 * // attached by @Throttle; nothing to register
 * @MessagePattern('export') @Throttle('exports-in-flight') export() {}
 */
@Injectable()
export class LeaseReleaseInterceptor implements NestInterceptor {
  private readonly logger = new Logger('RedlimitGuard');

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const args = context.getArgs();
    const leases = leasesByCall.get(args);
    if (!leases) return next.handle();
    leasesByCall.delete(args);
    return next.handle().pipe(
      finalize(() => {
        for (const { limiter, decision } of leases) {
          limiter
            .release(decision)
            .catch((error: unknown) =>
              this.logger.warn(
                `Could not release a lease of policy '${decision.policy}'; it expires after its window (${error instanceof Error ? error.message : String(error)})`,
              ),
            );
        }
      }),
    );
  }
}
