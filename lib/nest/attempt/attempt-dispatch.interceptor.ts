import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Observable } from 'rxjs';
import { REDLIMIT_ATTEMPT_INTERCEPTOR } from '../module/redlimit.constants';

/**
 * What `@Attempt` attaches to its handler (as `@UseInterceptors` would): hands the call to the
 * module's attempt interceptor (`AttemptInterceptor`, or the `attemptInterceptor` given to
 * `forRoot`). Only handlers with `@Attempt` pay for an interceptor; it works on HTTP routes,
 * GraphQL resolvers, WebSocket gateways and microservice handlers alike.
 *
 * @example
 * // attached by @Attempt; nothing to register
 * signIn(@Attempt(['ip', 'email'], { policy: 'login' }) attempt: Attempt) {}
 */
@Injectable()
export class AttemptDispatchInterceptor implements NestInterceptor {
  private inner?: NestInterceptor;

  // The module's interceptor is looked up app-wide on first use, so @Attempt works in feature
  // modules of an app whose RedlimitModule is not global (`isGlobal: false`).
  constructor(private readonly moduleRef: ModuleRef) {}

  intercept(
    context: ExecutionContext,
    next: CallHandler,
  ): Observable<unknown> | Promise<Observable<unknown>> {
    if (!this.inner) {
      try {
        this.inner = this.moduleRef.get<NestInterceptor>(REDLIMIT_ATTEMPT_INTERCEPTOR, {
          strict: false,
        });
      } catch {
        throw new Error(
          '@Attempt(): RedlimitModule is not imported in this application; import ' +
            'RedlimitModule.forRoot() (or forRootAsync()) in the root module',
        );
      }
    }
    return this.inner.intercept(context, next);
  }
}
