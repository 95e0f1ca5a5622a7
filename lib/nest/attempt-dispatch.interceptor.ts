import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { REDLIMIT_ATTEMPT_INTERCEPTOR } from './redlimit.constants';

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
  constructor(@Inject(REDLIMIT_ATTEMPT_INTERCEPTOR) private readonly inner: NestInterceptor) {}

  intercept(
    context: ExecutionContext,
    next: CallHandler,
  ): Observable<unknown> | Promise<Observable<unknown>> {
    return this.inner.intercept(context, next);
  }
}
